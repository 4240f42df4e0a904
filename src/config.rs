//! One typed configuration, loaded once in `main` from flags and `HDS_*`
//! environment variables (clap reads both) and passed down. No globals.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::store::Durability;

#[derive(Clone, Debug, clap::Args)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "HDS_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Directory holding the database and the receipt signing keys.
    #[arg(long, env = "HDS_DATA_DIR", default_value = "./hds-data")]
    pub data_dir: PathBuf,
    /// Public base URL (receipt issuer, links). Set it to the reverse proxy's https URL.
    #[arg(long, env = "HDS_BASE_URL", default_value = "http://127.0.0.1:8080")]
    pub base_url: String,
    /// `full`: fsync every commit (a decision survives power loss); `normal`:
    /// survives a crash of hds, may lose the last commits on power loss.
    #[arg(long, env = "HDS_DURABILITY", value_enum, default_value = "full")]
    pub durability: Durability,
    /// Accept http and private/loopback callback URLs. For development and tests only.
    #[arg(long, env = "HDS_ALLOW_PRIVATE_CALLBACKS", default_value_t = false)]
    pub allow_private_callbacks: bool,
    /// Requests per second per Source or user (burst: twice that); 0 disables.
    #[arg(long, env = "HDS_RATE_LIMIT", default_value_t = 100)]
    pub rate_limit: u32,
}

impl Config {
    pub fn db_path(&self) -> PathBuf {
        self.data_dir.join("hds.db")
    }

    /// Defaults with another data dir: for tests and `hds init`.
    pub fn for_data_dir(data_dir: PathBuf) -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data_dir,
            base_url: "http://127.0.0.1:8080".into(),
            durability: Durability::Full,
            allow_private_callbacks: false,
            rate_limit: 100,
        }
    }
}
