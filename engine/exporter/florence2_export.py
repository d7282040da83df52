#!/usr/bin/python3
"""Command-line entry of the exporter; see florence2/export.py."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from florence2.export import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
