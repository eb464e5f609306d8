# A package config that is found.
set(LowpFakeOk_VERSION 1.0)
