//! Backups and restores (`RedisBackup`, `spec.backup`, `spec.restore`; DESIGN §3o). The data
//! never passes through the controller: a Job in the Redis's namespace runs the operator image's
//! `redis-backup` (the `backup` crate), which streams an RDB over the replication protocol from
//! a replica (Standalone: the pod) into the bucket, and an init container downloads one into a
//! restored pod. The controller only reads the tenant's object store through those pods: it
//! never holds the credentials nor connects to an endpoint a tenant names.
//!
//! - [`plan`]: which pod a backup reads, what a Job's end says, the status (pure).
//! - [`job`]: the backup Job, the delete Job, the restore init container (pure).
//! - [`schedule`]: what is due, the scheduled backups' names, what `keep` deletes (pure).
//! - [`restore`]: the restore of a new Redis: its source, its pods' init container, the
//!   `Restored` condition (pure, with a lookup of the `RedisBackup` it names).
//! - [`controller`]: the `RedisBackup` reconciler; [`scheduler`]: the schedules' loop.

pub mod controller;
pub mod job;
pub mod plan;
pub mod restore;
pub mod schedule;
pub mod scheduler;
