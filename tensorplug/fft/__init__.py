"""tp.fft: discrete Fourier transforms (see tensorplug.fft._transforms)."""
