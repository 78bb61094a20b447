//! (issue 5, in progress)

use datafusion::prelude::SessionContext;

/// (issue 5, in progress: registers nothing yet)
pub fn register(_ctx: &SessionContext) -> crate::Result<()> {
    Ok(())
}
