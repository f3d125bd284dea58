"""validate: every cell and supporting file checked, and the verdict kept while nothing it read changes."""
