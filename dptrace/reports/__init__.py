"""Rendering: the report model and its terminal and JSON faces. Nothing here parses."""
