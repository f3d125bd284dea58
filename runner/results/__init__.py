"""What people read: a run's outcome and reports, the history store and its gates, the parity table."""
