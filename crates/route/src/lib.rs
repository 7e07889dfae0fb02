//! npuprof-route.
