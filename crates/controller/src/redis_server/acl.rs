//! ACL users on one redis-server (DESIGN §3l): set every user the Redis has, delete the ones it
//! no longer has, and point replication at the replication user.

use super::Server;
use crate::Error;
use api::acl::{DEFAULT_USER, REPLICATION_USER};

impl Server<'_> {
    /// `ACL SETUSER` each of `users` (name, arguments) in order, `ACL DELUSER` every other user
    /// but the default one, then `CONFIG SET masteruser masteruser masterauth <replication>`,
    /// on one connection. A user redis-server refuses (a command its version lacks, say) does
    /// not hold back the others: the refusals are returned together, each with its user.
    pub async fn apply_users(
        &self,
        users: &[(&str, &[String])],
        replication_password: &str,
    ) -> Result<(), Error> {
        let mut link = self.connect().await.map_err(|e| self.failed(e))?;
        let con = &mut link.con;
        let mut refused = Vec::new();
        for (name, args) in users {
            let mut command = redis::cmd("ACL");
            command.arg("SETUSER").arg(*name).arg(*args);
            if let Err(e) = command.query_async::<()>(con).await {
                if e.is_io_error() || e.is_timeout() {
                    return Err(self.failed(e));
                }
                refused.push(format!("user {name}: {e}"));
            }
        }
        let present: Vec<String> = redis::cmd("ACL")
            .arg("USERS")
            .query_async(con)
            .await
            .map_err(|e| self.failed(e))?;
        let stale: Vec<&String> = present
            .iter()
            .filter(|p| p.as_str() != DEFAULT_USER && !users.iter().any(|(n, _)| n == p))
            .collect();
        if !stale.is_empty() {
            redis::cmd("ACL")
                .arg("DELUSER")
                .arg(&stale)
                .query_async::<()>(con)
                .await
                .map_err(|e| self.failed(e))?;
        }
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("masteruser")
            .arg(REPLICATION_USER)
            .arg("masterauth")
            .arg(replication_password)
            .query_async::<()>(con)
            .await
            .map_err(|e| self.failed(e))?;
        if refused.is_empty() {
            Ok(())
        } else {
            Err(self.refused(refused.join("; ")))
        }
    }
}
