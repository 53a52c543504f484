//! The chaos test's split-brain witnesses (`e2e::witness`) against real redis-server processes
//! on 127.0.0.1 (the machine's, installed by hack/cluster/node/packages.sh): they must see two
//! primaries acknowledging at once when there are two, and nothing when there is one.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use e2e::Error;
use e2e::history::{History, Target, masters_at_once, overlapping};
use e2e::local_redis::LocalRedis;
use e2e::witness::{Addresses, Witnesses};

/// A primary with a linked replica.
async fn pair() -> Result<(LocalRedis, LocalRedis), Error> {
    let primary = LocalRedis::builder().no_persistence().start().await?;
    let replica = LocalRedis::builder()
        .no_persistence()
        .replica_of(primary.port)
        .spawn()?;
    replica.wait_linked().await?;
    Ok((primary, replica))
}

/// Witnesses on `members` (name, port) for a while: the history they recorded.
async fn witnessed(members: &[(&str, u16)]) -> History {
    let addresses: Addresses = Arc::new(Mutex::new(
        members
            .iter()
            .map(|(name, port)| ((*name).to_owned(), format!("127.0.0.1:{port}")))
            .collect::<BTreeMap<_, _>>(),
    ));
    let names: Vec<String> = members.iter().map(|(n, _)| (*n).to_owned()).collect();
    let history = Arc::new(Mutex::new(History::default()));
    let witnesses = Witnesses::start(&names, addresses, Target::plain(0, None), history.clone());
    tokio::time::sleep(Duration::from_secs(2)).await;
    witnesses.stop().await;
    History::take(&history)
}

/// Two primaries, each acknowledging with a replica of its own (a split brain): the writers
/// pinned to them see overlapping acknowledgements by two servers, the samplers two masters,
/// and the chaos test's check fails.
#[tokio::test]
async fn two_primaries_acknowledging_at_once_are_seen() -> Result<(), Error> {
    let (a, _a_replica) = pair().await?;
    let (b, _b_replica) = pair().await?;
    let history = witnessed(&[("a", a.port), ("b", b.port)]).await;
    let overlaps = overlapping(&history.acks);
    let masters = masters_at_once(&history.roles);
    assert!(
        !overlaps.is_empty(),
        "{} acks, no overlap",
        history.acks.len()
    );
    assert_eq!(masters.len(), 1, "{masters:?}");
    assert_eq!(masters[0].members.len(), 2, "{masters:?}");
    let check = std::panic::catch_unwind(|| history.assert_safe(&[], &overlaps, ""));
    assert!(check.is_err(), "assert_safe passed two primaries");
    Ok(())
}

/// One primary and its two replicas: the writers pinned to the replicas are refused, nothing
/// overlaps, one master answers.
#[tokio::test]
async fn one_primary_is_not_taken_for_two() -> Result<(), Error> {
    let (primary, replica) = pair().await?;
    let other = LocalRedis::builder()
        .no_persistence()
        .replica_of(primary.port)
        .spawn()?;
    other.wait_linked().await?;
    let history = witnessed(&[
        ("p", primary.port),
        ("r1", replica.port),
        ("r2", other.port),
    ])
    .await;
    assert!(history.acks.len() > 20, "{} acks", history.acks.len());
    assert!(history.refused > 0, "the replicas refused nothing");
    assert!(overlapping(&history.acks).is_empty());
    assert!(
        masters_at_once(&history.roles).is_empty(),
        "{:?}",
        history.roles
    );
    history.assert_safe(&[], &[], "");
    Ok(())
}
