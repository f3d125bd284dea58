"""A spec from text to a modelled value: load, compose, resolve, model, and the files a spec names."""
