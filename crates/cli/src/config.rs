//! The server's configuration file (TOML). Every key is a setting of `permafrost serve`
//! with the flag's name in snake_case; a flag or environment variable overrides the file,
//! the file overrides the built-in default. Unknown keys are errors.
//!
//! ```toml
//! listen = "127.0.0.1:5433"
//! data_dir = "/var/lib/permafrost"
//! memory_limit = "8GiB"
//! partitions = 4
//! metrics_listen = "127.0.0.1:9187"
//! tls_cert = "/etc/permafrost/server.crt"
//! tls_key = "/etc/permafrost/server.key"
//!
//! [[users]]
//! name = "app"
//! password = "change me"
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A size: `"64MiB"`, `"2GiB"` or a number of bytes.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Size {
    Bytes(u64),
    Text(String),
}

impl Size {
    pub fn bytes(&self, setting: &str) -> Result<u64, String> {
        match self {
            Size::Bytes(n) => Ok(*n),
            Size::Text(s) => permafrost_executor::parse_size(s).map_err(|e| format!("invalid setting {setting}: {e}")),
        }
    }
}

/// `on`/`off` or a boolean.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OnOff {
    Bool(bool),
    Text(String),
}

impl OnOff {
    pub fn text(&self) -> String {
        match self {
            OnOff::Bool(true) => "on".into(),
            OnOff::Bool(false) => "off".into(),
            OnOff::Text(s) => s.clone(),
        }
    }
}

/// A user who logs in with SCRAM-SHA-256.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserConfig {
    pub name: String,
    pub password: String,
}

/// The file's contents.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub listen: Option<String>,
    pub data_dir: Option<PathBuf>,
    pub metrics_listen: Option<String>,
    pub memory_limit: Option<Size>,
    pub partitions: Option<u32>,
    pub anticache: Option<OnOff>,
    pub block_size: Option<Size>,
    pub merge: Option<String>,
    pub hole_threshold: Option<f64>,
    pub retrieval: Option<String>,
    pub eviction_threshold: Option<f64>,
    pub eviction_size: Option<Size>,
    pub cold_policy: Option<String>,
    pub lru_sample_rate: Option<f64>,
    pub max_restarts: Option<u32>,
    pub command_log: Option<String>,
    pub group_commit_window: Option<String>,
    pub log_segment_size: Option<Size>,
    pub log_preallocate: Option<OnOff>,
    pub snapshot_interval: Option<String>,
    pub snapshot_log_size: Option<Size>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub trust_remote: Option<bool>,
    pub max_connections: Option<usize>,
    pub authentication_timeout: Option<String>,
    #[serde(default)]
    pub users: Vec<UserConfig>,
}

impl FileConfig {
    /// Reads and checks a configuration file; relative paths in it are taken relative to
    /// the file's directory.
    pub fn load(path: &Path) -> Result<FileConfig, String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
        let mut c = FileConfig::parse(&text).map_err(|e| format!("config file {}: {e}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        for p in [&mut c.data_dir, &mut c.tls_cert, &mut c.tls_key].into_iter().flatten() {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        }
        Ok(c)
    }

    pub fn parse(text: &str) -> Result<FileConfig, String> {
        let c: FileConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut seen = std::collections::HashSet::new();
        for u in &c.users {
            if u.name.is_empty() {
                return Err("users: a user needs a name".into());
            }
            if u.password.is_empty() {
                return Err(format!("users: user \"{}\" needs a password", u.name));
            }
            if !seen.insert(u.name.clone()) {
                return Err(format!("users: user \"{}\" is listed twice", u.name));
            }
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_parses() {
        let c = FileConfig::parse(
            r#"
            listen = "0.0.0.0:6000"
            memory_limit = "2GiB"
            block_size = 65536
            partitions = 3
            anticache = false
            merge = "block"
            log_segment_size = "8MiB"
            [[users]]
            name = "app"
            password = "pw"
            "#,
        )
        .unwrap();
        assert_eq!(c.listen.as_deref(), Some("0.0.0.0:6000"));
        assert_eq!(c.memory_limit.unwrap().bytes("memory_limit").unwrap(), 2 << 30);
        assert_eq!(c.block_size.unwrap().bytes("block_size").unwrap(), 65536);
        assert_eq!(c.anticache.unwrap().text(), "off");
        assert_eq!(c.log_segment_size.unwrap().bytes("log_segment_size").unwrap(), 8 << 20);
        assert_eq!(c.users.len(), 1);
    }

    #[test]
    fn mistakes_name_the_setting() {
        let e = FileConfig::parse("memroy_limit = \"1GiB\"").unwrap_err();
        assert!(e.contains("memroy_limit"), "{e}");
        let e = FileConfig::parse("partitions = \"two\"").unwrap_err();
        assert!(e.contains("partitions"), "{e}");
        let e = FileConfig::parse("memory_limit = \"lots\"")
            .unwrap()
            .memory_limit
            .unwrap()
            .bytes("memory_limit")
            .unwrap_err();
        assert!(e.contains("memory_limit"), "{e}");
        let e = FileConfig::parse("[[users]]\nname = \"a\"\npassword = \"\"").unwrap_err();
        assert!(e.contains("password"), "{e}");
    }
}
