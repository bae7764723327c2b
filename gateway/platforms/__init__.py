"""Factories mapping `platforms.*` config sections to adapter constructors (the only place that joins the two)."""
