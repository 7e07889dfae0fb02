//! The profile directory a launched server writes into, made after [`crate::check`] passed.

use crate::{ServeError, ServeRequest, Target};

/// Makes the profile directory (and its missing parents) when collect launches the server, or
/// names it in the start request (the request style); a server collect attaches to (`--url`)
/// otherwise writes where it was started to, so nothing is made.
pub fn make_profile_dir(request: &ServeRequest) -> Result<(), ServeError> {
    let named_in_request = request.settings.start_body.is_some();
    if !matches!(request.target, Target::Launch { .. }) && !named_in_request {
        return Ok(());
    }
    npuprof_journal::probe::create_dir_outside(&request.profile_dir)
        .map(drop)
        .map_err(|source| ServeError::ProfileDir {
            dir: request.profile_dir.display().to_string(),
            source,
        })
}
