"""Go's math/rand (v1) and time text, bit for bit as TSBS draws and prints them."""
