"""The parts of ferrobloom's benchmark (`make bench`); bench/run.py is the entry
point and its docstring the overview."""
