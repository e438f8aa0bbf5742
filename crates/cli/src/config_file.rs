//! The server's configuration file (TOML). Every key is a setting of `permafrost serve`
//! (the tables `ENGINE_SETTINGS` and `SERVER_SETTINGS`) with the flag's name in snake_case,
//! read by the setting's own parser; a flag or environment variable overrides the file,
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

use std::collections::BTreeMap;
use std::path::Path;

use permafrost_executor::settings::{ENGINE_SETTINGS, Setting, Toml};
use serde::Deserialize;

use crate::server_settings::SERVER_SETTINGS;

/// A user who logs in with SCRAM-SHA-256.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct User {
    pub name: String,
    pub password: String,
}

/// The file's contents: each setting's value as text (checked by the setting's parser),
/// and the users.
#[derive(Debug, Default)]
pub struct ConfigFile {
    values: BTreeMap<String, String>,
    pub users: Vec<User>,
}

impl ConfigFile {
    /// Reads and checks a configuration file; relative paths in it are taken relative to
    /// the file's directory.
    pub fn load(path: &Path) -> Result<ConfigFile, String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        ConfigFile::read(&text, Some(base)).map_err(|e| format!("config file {}: {e}", path.display()))
    }

    /// Reads and checks a configuration file's text (relative paths as they are).
    #[cfg(test)]
    pub fn parse(text: &str) -> Result<ConfigFile, String> {
        ConfigFile::read(text, None)
    }

    /// The text of the setting `name` (a config file key), if the file gives it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    fn read(text: &str, base: Option<&Path>) -> Result<ConfigFile, String> {
        let table: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut c = ConfigFile::default();
        for (key, value) in table {
            if key == "users" {
                c.users = users(value)?;
                continue;
            }
            let text = if let Some(s) = ENGINE_SETTINGS.iter().find(|s| s.name == key) {
                setting_text(s, value, base)?
            } else if let Some(s) = SERVER_SETTINGS.iter().find(|s| s.name == key) {
                setting_text(s, value, base)?
            } else {
                return Err(unknown_key(&key));
            };
            c.values.insert(key, text);
        }
        Ok(c)
    }
}

/// A setting's value in the file as the text its flag would take, checked.
fn setting_text<S: Default>(s: &Setting<S>, value: toml::Value, base: Option<&Path>) -> Result<String, String> {
    let (toml, text) = match value {
        toml::Value::String(t) => (Toml::String, t),
        toml::Value::Integer(i) => (Toml::Integer, i.to_string()),
        toml::Value::Float(f) => (Toml::Float, f.to_string()),
        toml::Value::Boolean(b) => (Toml::Boolean, b.to_string()),
        other => {
            return Err(format!(
                "invalid setting {}: expected {}, got {}",
                s.name,
                expected(s.toml),
                other.type_str()
            ));
        }
    };
    if !s.toml.contains(&toml) {
        return Err(format!(
            "invalid setting {}: expected {}, got {} ({text})",
            s.name,
            expected(s.toml),
            toml.name()
        ));
    }
    let text = match base {
        Some(base) if s.path && Path::new(&text).is_relative() && !text.is_empty() => {
            base.join(&text).to_string_lossy().into_owned()
        }
        _ => text,
    };
    s.check(&text)?;
    Ok(text)
}

fn expected(types: &[Toml]) -> String {
    let names: Vec<_> = types.iter().map(|t| t.name()).collect();
    names.join(" or ")
}

fn unknown_key(key: &str) -> String {
    let names = ENGINE_SETTINGS
        .iter()
        .map(|s| s.name)
        .chain(SERVER_SETTINGS.iter().map(|s| s.name))
        .chain(["users"]);
    let mut known: Vec<&str> = names.collect();
    known.sort_unstable();
    let near = known.iter().find(|k| edit_distance(k, key) <= 2);
    match near {
        Some(k) => format!("unknown setting `{key}` (did you mean `{k}`?)"),
        None => format!("unknown setting `{key}`; the settings are {}", known.join(", ")),
    }
}

/// Levenshtein distance (the names are short).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}

fn users(value: toml::Value) -> Result<Vec<User>, String> {
    let users: Vec<User> = value.try_into().map_err(|e| format!("users: {e}"))?;
    let mut seen = std::collections::HashSet::new();
    for u in &users {
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
    Ok(users)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::{BenchEngine, Flags, Server};

    #[test]
    fn a_full_file_parses() {
        let c = ConfigFile::parse(
            r#"
            listen = "0.0.0.0:6000"
            memory_limit = "2GiB"
            block_size = 65536
            partitions = 3
            anticache = false
            merge = "block"
            hole_threshold = 1
            log_segment_size = "8MiB"
            trust_remote = true
            [[users]]
            name = "app"
            password = "pw"
            "#,
        )
        .unwrap();
        assert_eq!(c.get("listen"), Some("0.0.0.0:6000"));
        assert_eq!(c.get("memory_limit"), Some("2GiB"));
        assert_eq!(c.users.len(), 1);
        let engine = Flags::<BenchEngine>::none().resolve(&c).unwrap();
        assert_eq!(engine.memory_limit, Some(2 << 30));
        assert_eq!(engine.block_size, Some(65536));
        assert_eq!(engine.partitions, Some(3));
        assert!(!engine.anticache);
        assert_eq!(engine.merge, permafrost_executor::MergePolicy::Block);
        assert_eq!(engine.hole_threshold, Some(1.0));
        assert_eq!(engine.segment_bytes, Some(8 << 20));
        let server = Flags::<Server>::none().resolve(&c).unwrap();
        assert_eq!(server.listen.to_string(), "0.0.0.0:6000");
        assert!(server.trust_remote);
    }

    #[test]
    fn mistakes_name_the_setting() {
        let e = ConfigFile::parse("memroy_limit = \"1GiB\"").unwrap_err();
        assert!(
            e.contains("memroy_limit") && e.contains("did you mean `memory_limit`"),
            "{e}"
        );
        let e = ConfigFile::parse("verbosity = 3").unwrap_err();
        assert!(e.contains("verbosity") && e.contains("max_connections"), "{e}");
        let e = ConfigFile::parse("partitions = \"two\"").unwrap_err();
        assert!(e.contains("partitions") && e.contains("expected an integer"), "{e}");
        let e = ConfigFile::parse("memory_limit = \"lots\"").unwrap_err();
        assert!(
            e.contains("invalid setting memory_limit") && e.contains("not a size"),
            "{e}"
        );
        let e = ConfigFile::parse("max_connections = 0").unwrap_err();
        assert!(e.contains("max_connections: 0 (allowed: 1 to 1000000)"), "{e}");
        let e = ConfigFile::parse("trust_remote = \"yes\"").unwrap_err();
        assert!(e.contains("trust_remote"), "{e}");
        let e = ConfigFile::parse("command_log = [\"sync\"]").unwrap_err();
        assert!(e.contains("command_log") && e.contains("array"), "{e}");
        let e = ConfigFile::parse("[[users]]\nname = \"a\"\npassword = \"\"").unwrap_err();
        assert!(e.contains("password"), "{e}");
        let e = ConfigFile::parse("[[users]]\nname = \"a\"\npasswd = \"x\"").unwrap_err();
        assert!(e.contains("users") && e.contains("passwd"), "{e}");
    }

    #[test]
    fn relative_paths_are_relative_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("permafrost.toml");
        std::fs::write(&path, "data_dir = \"data\"\ntls_cert = \"/etc/cert.pem\"\n").unwrap();
        let c = ConfigFile::load(&path).unwrap();
        assert_eq!(c.get("data_dir"), Some(dir.path().join("data").to_str().unwrap()));
        assert_eq!(c.get("tls_cert"), Some("/etc/cert.pem"));
        let e = ConfigFile::load(&dir.path().join("absent.toml")).unwrap_err();
        assert!(e.contains("cannot read config file"), "{e}");
    }
}
