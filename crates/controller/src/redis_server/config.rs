//! Redis's own configuration on one redis-server (DESIGN §3m): the live directives of
//! `spec.config`, set with `CONFIG SET`.

use super::Server;
use crate::Error;

/// What one `CONFIG SET` came to, besides success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotSet {
    /// redis-server refused the value: its message, with the directive.
    Refused(String),
    /// It is loading its dataset and takes no such change yet: try again later.
    Loading,
}

impl Server<'_> {
    /// `CONFIG SET name value` for each of `settings`, one at a time on one connection: Redis 7's
    /// `CONFIG SET` of several pairs is all or nothing, and one refused value must not hold back
    /// the others. The ones not set are returned, each with why; `Err` when the server cannot be
    /// reached or stops answering.
    pub async fn set_config(&self, settings: &[(&str, &str)]) -> Result<Vec<NotSet>, Error> {
        let mut link = self.connect().await.map_err(|e| self.failed(e))?;
        let mut not_set = Vec::new();
        for (name, value) in settings {
            let mut command = redis::cmd("CONFIG");
            command.arg("SET").arg(*name).arg(*value);
            match command.query_async::<()>(&mut link.con).await {
                Ok(()) => {}
                Err(e) if e.is_io_error() || e.is_timeout() => return Err(self.failed(e)),
                Err(e) if e.code() == Some("LOADING") => not_set.push(NotSet::Loading),
                Err(e) => not_set.push(NotSet::Refused(format!("{name} {value:?}: {e}"))),
            }
        }
        Ok(not_set)
    }
}
