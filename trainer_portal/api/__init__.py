"""The REST API's shared machinery: the one exception handler, the JSON renderer and the token endpoint."""
