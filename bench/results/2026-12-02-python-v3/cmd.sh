# device call 1 of 2026-12-02 (fourth session), wheel and CLI of cca7b2d (.carry/flashgen-*.whl, .carry/pywheels):
OUT=$OUT/py bash python/tools/device.sh tests overhead
