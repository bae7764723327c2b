"""An example Chorus plugin package: one memory provider and one context engine, found through entry points."""
