"""CI registration."""
