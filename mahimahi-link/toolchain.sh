# Sourced by setup.sh and run-tests.sh: put a rustup toolchain of root or of
# the sudo user on the PATH (sudo's secure PATH leaves ~/.cargo/bin out), so
# the Rust that built mahimahi-link is the one that tests it.
for home in "$HOME" "$(getent passwd "${SUDO_USER:-root}" | cut -d: -f6)"; do
  if [ -n "$home" ] && [ -x "$home/.cargo/bin/cargo" ]; then PATH="$home/.cargo/bin:$PATH"; fi
done
export PATH
