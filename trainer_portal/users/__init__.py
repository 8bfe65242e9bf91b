"""Local users, their role and groups, managed by platform admins on the Users page and ``/api/v1/users/``."""
