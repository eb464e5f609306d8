# Like Debian's oneDNN config with OpenCL: a package config that requires a dependency.
find_package(LowpNoSuchDependency REQUIRED)
