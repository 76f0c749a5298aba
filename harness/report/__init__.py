"""Reports: a run as text or JSON (tables, plots, HTML and trace export as they land)."""
