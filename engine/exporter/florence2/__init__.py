"""Florence-2 exporter for Florence Studio (see export.py)."""
