"""HTML views of the policy app: pages, the editor, the preview and the sync actions."""
