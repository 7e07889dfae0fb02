//! npuprof-verify.
