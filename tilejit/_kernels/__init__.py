"""Kernels tilejit itself uses (tensor constructors, random numbers), written in the kernel
language like any user kernel."""
