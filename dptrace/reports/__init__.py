"""Rendering: the report model and its terminal, JSON (and later HTML) faces. Nothing here parses."""
