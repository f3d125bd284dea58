"""The launch of a cell: rendered commands, prepare steps, services, scripts and shell text. Pure."""
