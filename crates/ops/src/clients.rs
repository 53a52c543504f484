//! Connections counted per client address (DESIGN §9 tenancy): one pod flooding a port with
//! connections gets its own share and no more, so the API server's and the kubelet's
//! connections, which come from other addresses, are still taken. At the cap a new connection
//! is closed at once rather than left in the listen backlog, where it would queue everyone
//! behind it.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

/// The open connections of each client address, and (when given) a budget of bytes per client.
#[derive(Debug)]
pub struct Clients {
    max_connections: usize,
    bytes_per_client: usize,
    open: Mutex<HashMap<IpAddr, Client>>,
}

#[derive(Debug)]
struct Client {
    connections: usize,
    bytes: Arc<Semaphore>,
}

/// One connection of a client; dropping it gives its place back.
#[derive(Debug)]
pub struct ClientConnection {
    clients: Arc<Clients>,
    ip: IpAddr,
    /// The client's budget of request-body bytes, shared by all its connections.
    pub bytes: Arc<Semaphore>,
}

impl Clients {
    /// At most `max_connections` open connections per address (at least 1), each address with
    /// `bytes_per_client` bytes to share among its connections (0: none used).
    pub fn new(max_connections: usize, bytes_per_client: usize) -> Arc<Self> {
        Arc::new(Clients {
            max_connections: max_connections.max(1),
            bytes_per_client,
            open: Mutex::new(HashMap::new()),
        })
    }

    /// A place for one more connection from `ip`, or `None` when it has its share.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<ClientConnection> {
        let mut open = self.open.lock().ok()?;
        let client = open.entry(ip).or_insert_with(|| Client {
            connections: 0,
            bytes: Arc::new(Semaphore::new(self.bytes_per_client)),
        });
        if client.connections >= self.max_connections {
            return None;
        }
        client.connections += 1;
        Some(ClientConnection {
            clients: self.clone(),
            ip,
            bytes: client.bytes.clone(),
        })
    }

    /// The connections open from `ip`.
    pub fn connections_of(&self, ip: IpAddr) -> usize {
        self.open
            .lock()
            .ok()
            .and_then(|open| open.get(&ip).map(|c| c.connections))
            .unwrap_or(0)
    }
}

impl Drop for ClientConnection {
    fn drop(&mut self) {
        if let Ok(mut open) = self.clients.open.lock()
            && let Some(client) = open.get_mut(&self.ip)
        {
            client.connections = client.connections.saturating_sub(1);
            if client.connections == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_address_gets_its_share_and_gets_it_back() {
        let clients = Clients::new(2, 0);
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        let first = clients.admit(a).expect("first");
        let second = clients.admit(a).expect("second");
        assert!(clients.admit(a).is_none(), "a third from one address");
        assert!(clients.admit(b).is_some(), "another address is not held up");
        drop(first);
        assert!(
            clients.admit(a).is_some(),
            "a place given back is taken again"
        );
        drop(second);
    }

    #[test]
    fn an_address_with_no_connection_left_is_forgotten() {
        let clients = Clients::new(4, 1024);
        let a: IpAddr = [10, 0, 0, 1].into();
        let one = clients.admit(a).expect("admitted");
        let two = clients.admit(a).expect("admitted");
        assert!(
            Arc::ptr_eq(&one.bytes, &two.bytes),
            "one budget per address"
        );
        drop((one, two));
        assert_eq!(clients.connections_of(a), 0);
        assert!(clients.open.lock().expect("lock").is_empty());
    }
}
