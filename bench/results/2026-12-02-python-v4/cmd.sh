# wheel built here (maturin build --release -m python/Cargo.toml), carried with .carry/pywheels (pytest)
OUT=$OUT/py bash python/tools/device.sh tests
