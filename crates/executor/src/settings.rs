//! The engine's settings as one value ([`DbSettings`]: the memory budget, anti-caching, the
//! command log, snapshots), filled by the command line (`permafrost serve`, the benchmarks)
//! or a program, and the database they open.
//!
//! Every setting a user can give is declared once, in the [`declare_settings!`] list below:
//! its field (name, type, default), its doc, how its text is read and shown ([`Kind`]) and
//! any check of its value. From that one entry come the [`DbSettings`] field, its default,
//! and its row in [`ENGINE_SETTINGS`], from which the command line builds the flag
//! (`--kebab-name`, with the doc and the default in its help), the environment variable
//! (`PERMAFROST_UPPER_NAME`) and the config file key (`snake_name`), and reads each of them
//! with the same parser and the same error message. Adding a setting is one entry here
//! (plus its use in [`DbSettings::config`]). The server's own settings (`listen`, ...) are
//! declared the same way in the command-line crate.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::config::{AntiCacheConfig, ColdPolicy, Config, LogConfig, LogMode, MergePolicy, Retrieval, SnapshotConfig};
use crate::database::Database;
use crate::error::{Error, Result};

/// Declares a settings struct and its table of [`Setting`]s from one list of entries.
///
/// ```text
/// declare_settings! {
///     #[derive(Debug, Clone)]
///     pub struct Name {
///         // fields that are not user settings (set by programs): name: Type = default,
///         /// Doc.
///         plain: Option<PathBuf> = None,
///     }
///     /// Doc of the table.
///     pub static TABLE {
///         /// Doc: the flag's help and the field's rustdoc.
///         field: Type = default => kind::Size;
///         /// A field whose `None` is the engine's choice, described for the help.
///         other: Option<u64> = None => kind::Size, unset "half of RAM";
///         /// A field with a setting name of its own, a check of the value and file only.
///         field_name as setting_name: u32 = 1 => kind::Number<u32>,
///             check |v: &u32| if *v > 0 { Ok(()) } else { Err("must be positive".to_string()) },
///             sources Sources::FileOnly;
///     }
/// }
/// ```
///
/// `Kind` is a [`Kind`] whose `Value` is the field's type, or with `unset`, the type inside
/// the field's `Option`. The setting's name (the config file key) is the field's name
/// unless `as` gives another; the flag and environment variable come from it
/// ([`Setting::flag`], [`Setting::env`]). Other attributes (`#[serde(...)]`) after the doc
/// go to the field.
#[macro_export]
macro_rules! declare_settings {
    (
        $(#[$smeta:meta])*
        $vis:vis struct $Name:ident {
            $( $(#[$fmeta:meta])* $fname:ident : $fty:ty = $fdefault:expr, )*
        }
        $(#[$tmeta:meta])*
        $tvis:vis static $TABLE:ident {
            $(
                $( #[ $($attr:tt)* ] )*
                $name:ident $(as $key:ident)? : $ty:ty = $default:expr => $kind:ty
                $(, unset $unset:expr)?
                $(, check $check:expr)?
                $(, sources $sources:expr)?
                ;
            )*
        }
    ) => {
        $(#[$smeta])*
        $vis struct $Name {
            $( $(#[$fmeta])* pub $fname: $fty, )*
            $( $( #[ $($attr)* ] )* pub $name: $ty, )*
        }

        impl ::core::default::Default for $Name {
            fn default() -> Self {
                $Name {
                    $( $fname: $fdefault, )*
                    $( $name: $default, )*
                }
            }
        }

        $(#[$tmeta])*
        $tvis static $TABLE: &[$crate::settings::Setting<$Name>] = &[
            $(
                $crate::settings::Setting {
                    name: $crate::__setting_name!($name $(, $key)?),
                    doc: $crate::__setting_doc!([] $( #[ $($attr)* ] )*),
                    value_name: <$kind as $crate::settings::Kind>::VALUE_NAME,
                    toml: <$kind as $crate::settings::Kind>::TOML,
                    path: <$kind as $crate::settings::Kind>::PATH,
                    sources: $crate::__setting_sources!($($sources)?),
                    show: |s: &$Name| $crate::__setting_show!($kind, &s.$name $(, $unset)?),
                    set: |s: &mut $Name, text: &str| {
                        let value = <$kind as $crate::settings::Kind>::parse(text)?;
                        $( ($check)(&value)?; )?
                        s.$name = $crate::__setting_wrap!(value $(, $unset)?);
                        Ok(())
                    },
                },
            )*
        ];
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __setting_name {
    ($name:ident) => {
        stringify!($name)
    };
    ($name:ident, $key:ident) => {
        stringify!($key)
    };
}

/// The doc comment's lines (`#[doc = "..."]`), other attributes left out.
#[doc(hidden)]
#[macro_export]
macro_rules! __setting_doc {
    ([$($line:literal)*]) => {
        concat!($($line, "\n",)*)
    };
    ([$($line:literal)*] #[doc = $doc:literal] $($rest:tt)*) => {
        $crate::__setting_doc!([$($line)* $doc] $($rest)*)
    };
    ([$($line:literal)*] #[$($other:tt)*] $($rest:tt)*) => {
        $crate::__setting_doc!([$($line)*] $($rest)*)
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __setting_sources {
    () => {
        $crate::settings::Sources::All
    };
    ($sources:expr) => {
        $sources
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __setting_show {
    ($kind:ty, $field:expr) => {
        $crate::settings::Shown::Value(<$kind as $crate::settings::Kind>::show($field))
    };
    ($kind:ty, $field:expr, $unset:expr) => {
        match $field {
            Some(v) => $crate::settings::Shown::Value(<$kind as $crate::settings::Kind>::show(v)),
            None => $crate::settings::Shown::Unset(::std::string::ToString::to_string(&$unset)),
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __setting_wrap {
    ($value:ident) => {
        $value
    };
    ($value:ident, $unset:expr) => {
        Some($value)
    };
}

/// Where a setting may be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sources {
    /// A flag, an environment variable or a config file key.
    All,
    /// Only a config file key (`trust_remote`).
    FileOnly,
}

/// A TOML type a setting's value may have in a config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toml {
    Integer,
    Float,
    Boolean,
    String,
}

impl Toml {
    pub fn name(self) -> &'static str {
        match self {
            Toml::Integer => "an integer",
            Toml::Float => "a number",
            Toml::Boolean => "a boolean",
            Toml::String => "a string",
        }
    }
}

/// A setting's value as the help shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum Shown {
    /// A value, written as the setting reads it.
    Value(String),
    /// Not set: what is used instead ("half of RAM").
    Unset(String),
}

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shown::Value(s) | Shown::Unset(s) => f.write_str(s),
        }
    }
}

/// One setting of a settings struct `S` (declared with [`declare_settings!`]).
pub struct Setting<S: 'static> {
    /// The name: the config file key, in snake_case.
    pub name: &'static str,
    /// The doc comment's lines (see [`Setting::doc`]).
    pub doc: &'static str,
    /// How the help writes the value (`SIZE`, `on|off`).
    pub value_name: &'static str,
    /// The TOML types the config file may give it as.
    pub toml: &'static [Toml],
    /// A path: relative ones in a config file are taken relative to the file's directory.
    pub path: bool,
    pub sources: Sources,
    /// The setting's value in `S`.
    pub show: fn(&S) -> Shown,
    /// Reads, checks and stores the setting's value from its text (without the setting's
    /// name in the error: see [`Setting::apply`]).
    pub set: fn(&mut S, &str) -> std::result::Result<(), String>,
}

impl<S> Setting<S> {
    /// The flag, without its dashes: `memory_limit` is `--memory-limit`.
    pub fn flag(&self) -> String {
        self.name.replace('_', "-")
    }

    /// The environment variable: `memory_limit` is `PERMAFROST_MEMORY_LIMIT`.
    pub fn env(&self) -> String {
        format!("PERMAFROST_{}", self.name.to_ascii_uppercase())
    }

    /// The doc as one line (without a final period, as clap writes help).
    pub fn doc(&self) -> String {
        let doc = self.doc.split_whitespace().collect::<Vec<_>>().join(" ");
        match doc.strip_suffix('.') {
            Some(d) if !d.contains(". ") => d.to_string(),
            _ => doc,
        }
    }

    /// Sets the setting in `settings` from its text; the error names the setting.
    pub fn apply(&self, settings: &mut S, text: &str) -> std::result::Result<(), String> {
        (self.set)(settings, text).map_err(|e| format!("invalid setting {}: {e}", self.name))
    }

    /// Whether `text` is a valid value (the error as [`Setting::apply`]'s).
    pub fn check(&self, text: &str) -> std::result::Result<(), String>
    where
        S: Default,
    {
        self.apply(&mut S::default(), text)
    }
}

impl<S> std::fmt::Debug for Setting<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setting")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// How a setting's value is written: read from text (a flag, an environment variable, a
/// config file value) and shown as text (the help's default).
pub trait Kind {
    type Value;
    /// How the help writes the value.
    const VALUE_NAME: &'static str;
    /// The TOML types the config file may give it as.
    const TOML: &'static [Toml];
    /// A path (relative ones in a config file are relative to its directory).
    const PATH: bool = false;
    fn parse(text: &str) -> std::result::Result<Self::Value, String>;
    /// The text `parse` reads back as `value`.
    fn show(value: &Self::Value) -> String;
}

/// The kinds of setting values.
pub mod kind {
    use std::marker::PhantomData;
    use std::path::PathBuf;

    use super::{Kind, Toml};

    /// Bytes: `64MiB`, `2GiB`, a plain number.
    pub struct Size;

    impl Kind for Size {
        type Value = u64;
        const VALUE_NAME: &'static str = "SIZE";
        const TOML: &'static [Toml] = &[Toml::Integer, Toml::String];
        fn parse(text: &str) -> Result<u64, String> {
            crate::config::parse_size(text)
        }
        fn show(value: &u64) -> String {
            for (unit, shift) in [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)] {
                if *value != 0 && value.is_multiple_of(1u64 << shift) {
                    return format!("{}{unit}", value >> shift);
                }
            }
            value.to_string()
        }
    }

    /// A whole number.
    pub struct Number<T>(PhantomData<T>);

    impl<T: std::str::FromStr + std::fmt::Display> Kind for Number<T> {
        type Value = T;
        const VALUE_NAME: &'static str = "N";
        const TOML: &'static [Toml] = &[Toml::Integer];
        fn parse(text: &str) -> Result<T, String> {
            text.trim()
                .parse()
                .map_err(|_| format!("\"{text}\" is not a whole number in range"))
        }
        fn show(value: &T) -> String {
            value.to_string()
        }
    }

    /// A number with a fraction (`0.5`).
    pub struct Fraction;

    impl Kind for Fraction {
        type Value = f64;
        const VALUE_NAME: &'static str = "F";
        const TOML: &'static [Toml] = &[Toml::Float, Toml::Integer];
        fn parse(text: &str) -> Result<f64, String> {
            text.trim().parse().map_err(|_| format!("\"{text}\" is not a number"))
        }
        fn show(value: &f64) -> String {
            value.to_string()
        }
    }

    /// `on` or `off` (`true`, `false` too).
    pub struct OnOff;

    impl Kind for OnOff {
        type Value = bool;
        const VALUE_NAME: &'static str = "on|off";
        const TOML: &'static [Toml] = &[Toml::Boolean, Toml::String];
        fn parse(text: &str) -> Result<bool, String> {
            match text {
                "on" | "true" => Ok(true),
                "off" | "false" => Ok(false),
                other => Err(format!("\"{other}\" (expected on or off)")),
            }
        }
        fn show(value: &bool) -> String {
            if *value { "on" } else { "off" }.into()
        }
    }

    /// `true` or `false`.
    pub struct Boolean;

    impl Kind for Boolean {
        type Value = bool;
        const VALUE_NAME: &'static str = "true|false";
        const TOML: &'static [Toml] = &[Toml::Boolean];
        fn parse(text: &str) -> Result<bool, String> {
            match text {
                "true" => Ok(true),
                "false" => Ok(false),
                other => Err(format!("\"{other}\" (expected true or false)")),
            }
        }
        fn show(value: &bool) -> String {
            value.to_string()
        }
    }

    /// A duration: `1ms`, `200us`, `30s`, `5m`, `1h`, `0` ([`super::parse_duration`]).
    pub struct Duration;

    impl Kind for Duration {
        type Value = std::time::Duration;
        const VALUE_NAME: &'static str = "DURATION";
        const TOML: &'static [Toml] = &[Toml::String];
        fn parse(text: &str) -> Result<std::time::Duration, String> {
            super::parse_duration(text)
        }
        fn show(value: &std::time::Duration) -> String {
            if value.is_zero() {
                return "0".into();
            }
            if value.subsec_nanos() == 0 {
                let s = value.as_secs();
                return if s.is_multiple_of(3600) {
                    format!("{}h", s / 3600)
                } else if s >= 120 && s.is_multiple_of(60) {
                    format!("{}m", s / 60)
                } else {
                    format!("{s}s")
                };
            }
            if value.as_nanos().is_multiple_of(1_000_000) {
                format!("{}ms", value.as_millis())
            } else {
                format!("{}us", value.as_micros())
            }
        }
    }

    /// A duration, or `off` (`0` too): `None`.
    pub struct DurationOrOff;

    impl Kind for DurationOrOff {
        type Value = Option<std::time::Duration>;
        const VALUE_NAME: &'static str = "DURATION|off";
        const TOML: &'static [Toml] = &[Toml::String];
        fn parse(text: &str) -> Result<Option<std::time::Duration>, String> {
            match text {
                "off" | "0" => Ok(None),
                t => Duration::parse(t).map(Some),
            }
        }
        fn show(value: &Option<std::time::Duration>) -> String {
            value.as_ref().map_or_else(|| "off".into(), Duration::show)
        }
    }

    /// A file or directory.
    pub struct Path;

    impl Kind for Path {
        type Value = PathBuf;
        const VALUE_NAME: &'static str = "PATH";
        const TOML: &'static [Toml] = &[Toml::String];
        const PATH: bool = true;
        fn parse(text: &str) -> Result<PathBuf, String> {
            if text.is_empty() {
                return Err("an empty path".into());
            }
            Ok(PathBuf::from(text))
        }
        fn show(value: &PathBuf) -> String {
            value.display().to_string()
        }
    }

    /// One of a few names.
    macro_rules! choice {
        ($(#[$meta:meta])* $kind:ident: $ty:ty, $value_name:literal, $expected:literal, $show:expr,
         { $($text:literal => $value:expr),+ $(,)? }) => {
            $(#[$meta])*
            pub struct $kind;

            impl Kind for $kind {
                type Value = $ty;
                const VALUE_NAME: &'static str = $value_name;
                const TOML: &'static [Toml] = &[Toml::String];
                fn parse(text: &str) -> Result<$ty, String> {
                    match text {
                        $($text => Ok($value),)+
                        other => Err(format!("\"{other}\" (expected {})", $expected)),
                    }
                }
                fn show(value: &$ty) -> String {
                    ($show)(value).to_string()
                }
            }
        };
    }

    choice!(
        /// The merge policy: `tuple` (with the default hole threshold) or `block`.
        Merge: crate::config::MergePolicy, "tuple|block", "tuple or block", crate::config::MergePolicy::name, {
            "tuple" => crate::config::MergePolicy::Tuple { hole_threshold: super::default_hole_threshold() },
            "block" => crate::config::MergePolicy::Block,
        }
    );
    choice!(
        /// How evicted data is retrieved.
        Retrieval: crate::config::Retrieval, "abort-restart|synchronous", "abort-restart or synchronous",
        crate::config::Retrieval::name, {
            "abort-restart" => crate::config::Retrieval::AbortRestart,
            "synchronous" => crate::config::Retrieval::Synchronous,
        }
    );
    choice!(
        /// The cold-tuple policy.
        ColdPolicy: crate::config::ColdPolicy, "lru|clock", "lru or clock", crate::config::ColdPolicy::name, {
            "lru" => crate::config::ColdPolicy::Lru,
            "clock" => crate::config::ColdPolicy::Clock,
        }
    );

    /// The command log's mode: `off`, `async` or `sync` (in any case, as `LogMode` reads it).
    pub struct CommandLog;

    impl Kind for CommandLog {
        type Value = crate::config::LogMode;
        const VALUE_NAME: &'static str = "off|async|sync";
        const TOML: &'static [Toml] = &[Toml::String];
        fn parse(text: &str) -> Result<crate::config::LogMode, String> {
            text.parse()
                .map_err(|_| format!("\"{text}\" (expected off, async or sync)"))
        }
        fn show(value: &crate::config::LogMode) -> String {
            value.as_str().into()
        }
    }
}

fn anticache_default() -> AntiCacheConfig {
    AntiCacheConfig::new("")
}

fn log_default() -> LogConfig {
    LogConfig::new("")
}

fn snapshot_default() -> SnapshotConfig {
    SnapshotConfig::new("")
}

/// The engine's defaults where the engine chooses them (partitions, memory limit, ...).
fn engine_default() -> Option<Config> {
    Config::builder().build().ok()
}

/// The tuple-merge policy's default hole threshold (the default policy's).
fn default_hole_threshold() -> f64 {
    match anticache_default().merge {
        MergePolicy::Tuple { hole_threshold } => hole_threshold,
        // Were block-merge the default, `merge = tuple` would start from half a block.
        MergePolicy::Block => 0.5,
    }
}

/// `lru_sample_rate`'s default, which depends on `cold_policy`.
fn default_lru_sample_rate() -> String {
    let clock = Config::builder()
        .anticache(AntiCacheConfig {
            cold_policy: ColdPolicy::Clock,
            ..anticache_default()
        })
        .build()
        .ok();
    match (engine_default(), clock) {
        (Some(lru), Some(clock)) => format!(
            "{:?} ({:?} with cold_policy clock)",
            lru.lru_sample_rate, clock.lru_sample_rate
        ),
        _ => "the engine's".into(),
    }
}

/// Checks a command-log setting with the log's own check (its message without the
/// "invalid setting NAME: " the caller adds).
fn check_log(set: impl FnOnce(&mut LogConfig)) -> std::result::Result<(), String> {
    let mut log = LogConfig::new("commandlog");
    set(&mut log);
    log.validate().map_err(|e| {
        let e = e.to_string();
        match e.strip_prefix("invalid setting ").and_then(|r| r.split_once(": ")) {
            Some((_, detail)) => detail.to_string(),
            None => e,
        }
    })
}

declare_settings! {
    /// The engine's settings. `None` (for the settings that are options) means the engine's
    /// default.
    #[derive(Debug, Clone, Serialize)]
    pub struct DbSettings {
        /// Directory for block files; a temporary directory (removed afterwards) if unset.
        data_dir: Option<PathBuf> = None,
        /// Where the command log goes (default: `commandlog` beside the blocks).
        log_dir: Option<PathBuf> = None,
        /// Where snapshots go; `None`: no snapshots (they need the command log).
        snapshot_dir: Option<PathBuf> = None,
    }

    /// The engine settings users give (`permafrost serve`, `permafrost bench`: flags,
    /// environment, config file), in the order the help lists them.
    pub static ENGINE_SETTINGS {
        /// Memory budget (e.g. 64MiB, 2GiB, plain bytes).
        memory_limit: Option<u64> = None => kind::Size, unset "half of RAM";
        /// Partitions (executor threads).
        partitions: Option<u32> = None => kind::Number<u32>, unset "number of CPU cores";
        /// Anti-caching: on (evict cold data to disk past the memory limit) or off.
        anticache: bool = true => kind::OnOff;
        /// Bytes per eviction block, 1KiB to 4MiB.
        block_size: Option<u64> = None => kind::Size,
            unset <kind::Size as Kind>::show(&(anticache_default().block_size as u64));
        /// Merge policy for fetched blocks: tuple or block.
        #[serde(serialize_with = "ser_merge")]
        merge: MergePolicy = anticache_default().merge => kind::Merge;
        /// Tuple-merge: fraction of a block that may be holes before it is merged whole.
        hole_threshold: Option<f64> = None => kind::Fraction,
            unset default_hole_threshold();
        /// How evicted data is retrieved: abort-restart or synchronous.
        #[serde(serialize_with = "ser_retrieval")]
        retrieval: Retrieval = anticache_default().retrieval => kind::Retrieval;
        /// Fraction of the memory limit at which eviction starts.
        eviction_threshold: Option<f64> = None => kind::Fraction,
            unset anticache_default().eviction_threshold;
        /// Bytes evicted per round beyond what brings memory under the threshold.
        eviction_size: Option<u64> = None => kind::Size,
            unset <kind::Size as Kind>::show(&anticache_default().eviction_size);
        /// Cold-tuple policy: lru or clock.
        #[serde(serialize_with = "ser_cold")]
        cold_policy: ColdPolicy = anticache_default().cold_policy => kind::ColdPolicy;
        /// Fraction of transactions that update the LRU chain (the paper's alpha).
        lru_sample_rate: Option<f64> = None => kind::Fraction, unset default_lru_sample_rate();
        /// Restarts allowed per transaction for evicted data.
        max_restarts: Option<u32> = None => kind::Number<u32>,
            unset engine_default().map_or_else(|| "the engine's".into(), |c| c.max_restarts.to_string());
        /// How long a statement (one SELECT, INSERT, UPDATE or DELETE, outside BEGIN) may
        /// hold its partitions before it moves off them and finishes in a forked
        /// copy-on-write image of them (a write's changes are applied afterwards), so one
        /// long statement does not keep other clients waiting (e.g. 50ms, 1s); off: it runs
        /// to its end where it started.
        read_slice: Option<Duration> = Some(crate::config::DEFAULT_READ_SLICE) => kind::DurationOrOff;
        /// How long a write the memory budget refuses waits for eviction to make room before
        /// it fails with 53200 (e.g. 10s, 500ms; 0: it fails at once). It waits only while
        /// eviction can free memory: with nothing evictable left it fails at once.
        memory_wait as memory_wait_timeout: Duration = crate::config::DEFAULT_MEMORY_WAIT => kind::Duration,
            check |d: &Duration| if *d <= Duration::from_secs(3600) { Ok(()) } else { Err("must be at most 1h".to_string()) };
        /// Command log: sync (a commit is acknowledged once its record is on disk), async
        /// (written in the background) or off.
        #[serde(serialize_with = "ser_log")]
        command_log: LogMode = LogMode::Off => kind::CommandLog;
        /// Group commit: how long the log writer gathers records before one write and
        /// fdatasync (e.g. 1ms, 200us, 0; 0: the records that arrive while the previous
        /// group is written and synced make the next group).
        group_commit_window: Option<Duration> = None => kind::Duration,
            unset <kind::Duration as Kind>::show(&log_default().group_commit_window);
        /// Command log: bytes per segment file before a new one is started, 1MiB to 4GiB.
        segment_bytes as log_segment_size: Option<u64> = None => kind::Size,
            unset <kind::Size as Kind>::show(&log_default().segment_bytes),
            check |b: &u64| check_log(|log| log.segment_bytes = *b);
        /// Command log: on (the next segment is written full of zeros in the background, so
        /// group commits overwrite allocated blocks instead of growing the file) or off (for
        /// copy-on-write file systems, where that spares nothing).
        log_preallocate: bool = log_default().preallocate => kind::OnOff;
        /// serve: time between snapshots (e.g. 5m, 30s), or off (only CHECKPOINT and
        /// --snapshot-log-size take them). Snapshots need the command log.
        snapshot_interval: Option<Duration> = snapshot_default().interval => kind::DurationOrOff;
        /// serve: also take a snapshot once the command log has grown by this much since the
        /// last one, bounding replay at restart; 0: off.
        snapshot_log_bytes as snapshot_log_size: u64 = snapshot_default().log_bytes => kind::Size;
    }
}

fn ser_log<S: serde::Serializer>(m: &LogMode, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(m.as_str())
}

fn ser_merge<S: serde::Serializer>(m: &MergePolicy, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(m.name())
}

fn ser_retrieval<S: serde::Serializer>(r: &Retrieval, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(r.name())
}

fn ser_cold<S: serde::Serializer>(c: &ColdPolicy, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(c.name())
}

/// Parses a duration: `1ms`, `200us`, `0.5s`, `5m`, `1h`, `0` (no unit: milliseconds).
pub fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("\"{s}\" is not a duration (examples: 1ms, 200us, 0)"))?;
    let secs = match unit.trim() {
        "h" => n * 3600.0,
        "m" | "min" => n * 60.0,
        "s" => n,
        "ms" | "" => n / 1e3,
        "us" | "µs" => n / 1e6,
        other => {
            return Err(format!(
                "\"{s}\" has an unknown unit \"{other}\" (use h, m, s, ms or us)"
            ));
        }
    };
    Duration::try_from_secs_f64(secs).map_err(|_| format!("\"{s}\" is out of range"))
}

impl DbSettings {
    /// The configuration these settings make, with the block files (and, unless given, the
    /// command log) in `dir`, which anti-caching and the command log need.
    pub fn config(&self, dir: Option<&Path>) -> Result<Config> {
        let mut b = Config::builder();
        let logged = self.command_log != LogMode::Off;
        let dir = match dir {
            Some(d) => Some(d.to_path_buf()),
            None if self.anticache || logged => {
                return Err(Error::Config {
                    setting: "data_dir",
                    message: "anti-caching and the command log need a directory".into(),
                });
            }
            None => None,
        };
        if logged {
            let root = dir.clone().unwrap_or_default();
            let mut log = LogConfig::new(self.log_dir.clone().unwrap_or_else(|| root.join("commandlog")));
            log.mode = self.command_log;
            if let Some(w) = self.group_commit_window {
                log.group_commit_window = w;
            }
            if let Some(s) = self.segment_bytes {
                log.segment_bytes = s;
            }
            log.preallocate = self.log_preallocate;
            b = b.command_log(log);
            if let Some(sd) = &self.snapshot_dir {
                let mut sc = SnapshotConfig::new(sd.clone());
                sc.interval = self.snapshot_interval;
                sc.log_bytes = self.snapshot_log_bytes;
                b = b.snapshots(sc);
            }
        }
        if let (true, Some(dir)) = (self.anticache, &dir) {
            let mut ac = AntiCacheConfig::new(dir);
            if let Some(b) = self.block_size {
                ac.block_size = b as usize;
            }
            ac.merge = match (self.merge, self.hole_threshold) {
                (MergePolicy::Tuple { .. }, Some(hole_threshold)) => MergePolicy::Tuple { hole_threshold },
                (merge, _) => merge,
            };
            ac.retrieval = self.retrieval;
            ac.cold_policy = self.cold_policy;
            if let Some(t) = self.eviction_threshold {
                ac.eviction_threshold = t;
            }
            if let Some(s) = self.eviction_size {
                ac.eviction_size = s;
            }
            b = b.anticache(ac);
        }
        if let Some(n) = self.max_restarts {
            b = b.max_restarts(n);
        }
        b = b.read_slice(self.read_slice);
        b = b.memory_wait(self.memory_wait);
        if let Some(p) = self.partitions {
            b = b.partitions(p);
        }
        if let Some(m) = self.memory_limit {
            b = b.memory_limit(m);
        }
        if let Some(a) = self.lru_sample_rate {
            b = b.lru_sample_rate(a);
        }
        b.build()
    }

    /// Opens an empty database with these settings in `dir` ([`DbSettings::config`]).
    pub fn open_in(&self, dir: Option<&Path>) -> Result<Database> {
        let mut config = self.config(dir)?;
        if let Some(dir) = dir {
            // Where queries past their working memory spill (as a data directory's `tmp`).
            let tmp = dir.join("tmp");
            std::fs::create_dir_all(&tmp).map_err(|e| Error::Config {
                setting: "data_dir",
                message: format!("cannot create {}: {e}", tmp.display()),
            })?;
            config.temp_dir = Some(tmp);
        }
        Database::open(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every setting is declared once, with all it needs: a name that makes a flag, an
    /// environment variable and a config file key, a doc, and a default whose text reads
    /// back as the same value.
    #[test]
    fn every_setting_is_complete() {
        let mut names = std::collections::HashSet::new();
        let base = DbSettings::default();
        for s in ENGINE_SETTINGS {
            assert!(names.insert(s.name), "{} declared twice", s.name);
            assert!(
                !s.name.is_empty()
                    && s.name
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{}: not a snake_case name",
                s.name
            );
            assert_eq!(s.sources, Sources::All, "{}: engine settings are flags too", s.name);
            assert_eq!(s.flag(), s.name.replace('_', "-"));
            assert!(s.env().starts_with("PERMAFROST_") && s.env() == s.env().to_ascii_uppercase());
            let doc = s.doc();
            assert!(
                doc.len() > 10 && !doc.contains("  ") && !doc.contains('\n'),
                "{}: doc {doc:?}",
                s.name
            );
            assert!(
                !doc.contains("[default"),
                "{}: the default is added from the declaration",
                s.name
            );
            assert!(!s.value_name.is_empty() && !s.toml.is_empty(), "{}", s.name);
            match (s.show)(&base) {
                Shown::Value(text) => {
                    let mut again = DbSettings::default();
                    s.apply(&mut again, &text)
                        .unwrap_or_else(|e| panic!("{}: the default {text:?} does not read back: {e}", s.name));
                    assert_eq!((s.show)(&again), Shown::Value(text.clone()), "{}", s.name);
                }
                Shown::Unset(what) => assert!(!what.is_empty(), "{}: an unset default needs a description", s.name),
            }
        }
        // The defaults are the components' defaults.
        let ac = AntiCacheConfig::new("");
        assert_eq!(
            (base.merge, base.retrieval, base.cold_policy),
            (ac.merge, ac.retrieval, ac.cold_policy)
        );
        assert_eq!(base.log_preallocate, LogConfig::new("").preallocate);
        let sc = SnapshotConfig::new("");
        assert_eq!(
            (base.snapshot_interval, base.snapshot_log_bytes),
            (sc.interval, sc.log_bytes)
        );
    }

    fn setting(name: &str) -> &'static Setting<DbSettings> {
        ENGINE_SETTINGS.iter().find(|s| s.name == name).unwrap()
    }

    #[test]
    fn values_read_and_errors_name_the_setting() {
        let mut s = DbSettings::default();
        setting("memory_limit").apply(&mut s, "64MiB").unwrap();
        setting("log_segment_size").apply(&mut s, "8MiB").unwrap();
        setting("snapshot_interval").apply(&mut s, "off").unwrap();
        setting("snapshot_log_size").apply(&mut s, "0").unwrap();
        setting("anticache").apply(&mut s, "false").unwrap();
        setting("merge").apply(&mut s, "block").unwrap();
        setting("command_log").apply(&mut s, "ASYNC").unwrap();
        assert_eq!(s.memory_limit, Some(64 << 20));
        assert_eq!(s.segment_bytes, Some(8 << 20));
        assert_eq!((s.snapshot_interval, s.snapshot_log_bytes), (None, 0));
        assert!(!s.anticache);
        assert_eq!(s.merge, MergePolicy::Block);
        assert_eq!(s.command_log, LogMode::Async);
        for (name, bad, says) in [
            ("memory_limit", "lots", "is not a size"),
            ("anticache", "maybe", "expected on or off"),
            ("merge", "row", "expected tuple or block"),
            ("retrieval", "later", "abort-restart or synchronous"),
            ("cold_policy", "lfu", "lru or clock"),
            ("command_log", "always", "off, async or sync"),
            ("snapshot_interval", "weekly", "is not a duration"),
            ("group_commit_window", "1 fortnight", "unknown unit"),
            ("log_segment_size", "1KiB", "must be between 1MiB and 4GiB"),
            ("partitions", "two", "not a whole number"),
        ] {
            let e = setting(name).check(bad).unwrap_err();
            assert!(
                e.starts_with(&format!("invalid setting {name}: ")) && e.contains(says),
                "{e}"
            );
        }
    }

    #[test]
    fn hole_threshold_sets_the_tuple_policy() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = DbSettings::default();
        setting("hole_threshold").apply(&mut s, "0.7").unwrap();
        let c = s.config(Some(dir.path())).unwrap();
        assert_eq!(c.anticache.unwrap().merge, MergePolicy::Tuple { hole_threshold: 0.7 });
        setting("merge").apply(&mut s, "block").unwrap();
        let c = s.config(Some(dir.path())).unwrap();
        assert_eq!(c.anticache.unwrap().merge, MergePolicy::Block);
        // A policy given whole keeps its threshold.
        let s = DbSettings {
            merge: MergePolicy::Tuple { hole_threshold: 0.9 },
            ..DbSettings::default()
        };
        let c = s.config(Some(dir.path())).unwrap();
        assert_eq!(c.anticache.unwrap().merge, MergePolicy::Tuple { hole_threshold: 0.9 });
    }

    #[test]
    fn durations_show_as_they_read() {
        for text in ["0", "200us", "1ms", "30s", "60s", "5m", "1h"] {
            let d = parse_duration(text).unwrap();
            assert_eq!(<kind::Duration as Kind>::show(&d), text);
        }
        assert_eq!(<kind::Size as Kind>::show(&(4 << 10)), "4KiB");
        assert_eq!(<kind::Size as Kind>::show(&1000), "1000");
    }
}
