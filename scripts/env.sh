# Sourced by the scripts: puts a rustup toolchain on PATH when there is one.
if [ -d "$HOME/.cargo/bin" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
