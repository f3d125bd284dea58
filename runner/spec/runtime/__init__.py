"""Run-time references: values substituted on the node when a cell launches, never by the spec."""
