"""Framework facts as data: adding a framework means adding rows here, not code in a rule."""
