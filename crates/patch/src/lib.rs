//! npuprof-patch.
