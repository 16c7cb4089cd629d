//! Targets: boot, readiness, resource sampling, logs and teardown for `container`, `process` and `url`.
