"""Django forms of the policy pages: list filters, the editor, imports and the preview panel."""
