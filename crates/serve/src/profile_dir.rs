//! The profile directory a launched server writes into, made after [`crate::check`] passed.

use crate::{ServeError, ServeRequest, Target};

/// Makes the profile directory (and its missing parents) when collect launches the server;
/// a server collect attaches to (`--url`) writes where it was started to, so nothing is made.
pub fn make_profile_dir(request: &ServeRequest) -> Result<(), ServeError> {
    if !matches!(request.target, Target::Launch { .. }) {
        return Ok(());
    }
    npuprof_journal::probe::create_dir_outside(&request.profile_dir)
        .map(drop)
        .map_err(|source| ServeError::ProfileDir {
            dir: request.profile_dir.display().to_string(),
            source,
        })
}
