"""The cells of a spec: its matrix expanded, each cell built, selected, and laid out on the GPUs."""
