//! The command line's settings: the server's own ([`ServerSettings`], declared here as the
//! engine's are in `permafrost_executor::settings`), and the flags and environment
//! variables of both, built from their tables ([`Flags`]). A setting's value comes from its
//! flag, else its environment variable, else the config file, else its default.

use std::marker::PhantomData;

use clap::{Arg, ArgMatches, Command, FromArgMatches};
use permafrost_executor::settings::{DbSettings, ENGINE_SETTINGS, Setting, Sources};

use crate::config_file::ConfigFile;
pub(crate) use crate::server_settings::{SERVER_SETTINGS, ServerSettings};

/// A group of settings as one command takes them: their table and their defaults there.
pub(crate) trait Profile: 'static {
    type Settings: Default + 'static;
    fn table() -> &'static [Setting<Self::Settings>];
    /// The settings' values when none is given.
    fn base() -> Self::Settings;
}

/// The engine settings of `permafrost serve`: the command log is on (sync).
#[derive(Debug)]
pub(crate) struct ServeEngine;

impl Profile for ServeEngine {
    type Settings = DbSettings;
    fn table() -> &'static [Setting<DbSettings>] {
        ENGINE_SETTINGS
    }
    fn base() -> DbSettings {
        DbSettings {
            command_log: permafrost_executor::LogMode::Sync,
            ..DbSettings::default()
        }
    }
}

/// The engine settings of the benchmarks: the engine's defaults (no command log).
#[derive(Debug)]
pub(crate) struct BenchEngine;

impl Profile for BenchEngine {
    type Settings = DbSettings;
    fn table() -> &'static [Setting<DbSettings>] {
        ENGINE_SETTINGS
    }
    fn base() -> DbSettings {
        DbSettings::default()
    }
}

/// The server's settings.
#[derive(Debug)]
pub(crate) struct Server;

impl Profile for Server {
    type Settings = ServerSettings;
    fn table() -> &'static [Setting<ServerSettings>] {
        SERVER_SETTINGS
    }
    fn base() -> ServerSettings {
        ServerSettings::default()
    }
}

/// The values a profile's settings were given as flags or environment variables (checked
/// by their parsers as clap reads them), one per setting of the table (`None`: not given).
#[derive(Debug)]
pub(crate) struct Flags<P: Profile> {
    given: Vec<Option<String>>,
    profile: PhantomData<P>,
}

impl<P: Profile> Flags<P> {
    /// No flags given (tests).
    #[cfg(test)]
    pub(crate) fn none() -> Self {
        Flags {
            given: vec![None; P::table().len()],
            profile: PhantomData,
        }
    }

    /// Whether any setting was given, as a flag or an environment variable.
    pub(crate) fn any_given(&self) -> bool {
        self.given.iter().any(Option::is_some)
    }

    /// The settings: each from its flag or environment variable, else from `file`, else
    /// the profile's default.
    pub(crate) fn resolve(&self, file: &ConfigFile) -> Result<P::Settings, String> {
        let mut settings = P::base();
        for (setting, given) in P::table().iter().zip(&self.given) {
            if let Some(text) = given.as_deref().or_else(|| file.get(setting.name)) {
                setting.apply(&mut settings, text)?;
            }
        }
        Ok(settings)
    }

    fn arg(setting: &'static Setting<P::Settings>, base: &P::Settings) -> Arg {
        Arg::new(setting.name)
            .long(setting.flag())
            .env(setting.env())
            .value_name(setting.value_name)
            .help(format!("{} [default: {}]", setting.doc(), (setting.show)(base)))
            // clap's error names the flag; the setting's parser says what is wrong.
            .value_parser(move |text: &str| (setting.set)(&mut P::Settings::default(), text).map(|()| text.to_string()))
    }

    fn flags() -> impl Iterator<Item = &'static Setting<P::Settings>> {
        P::table().iter().filter(|s| s.sources == Sources::All)
    }
}

impl<P: Profile> clap::Args for Flags<P> {
    fn augment_args(cmd: Command) -> Command {
        let base = P::base();
        cmd.args(Self::flags().map(|s| Self::arg(s, &base)))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl<P: Profile> FromArgMatches for Flags<P> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = Flags {
            given: vec![None; P::table().len()],
            profile: PhantomData,
        };
        flags.update_from_arg_matches(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        for (setting, given) in P::table().iter().zip(&mut self.given) {
            if setting.sources == Sources::All
                && let Some(v) = matches.try_get_one::<String>(setting.name).ok().flatten()
            {
                *given = Some(v.clone());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server's settings are declared as completely as the engine's (which the
    /// executor checks): a name for the flag, the environment variable and the file key, a
    /// doc, a default that reads back. Only `trust_remote` is in the file alone.
    #[test]
    fn every_server_setting_is_complete() {
        let base = ServerSettings::default();
        let engine: Vec<_> = ENGINE_SETTINGS.iter().map(|s| s.name).collect();
        let mut names = std::collections::HashSet::new();
        for s in SERVER_SETTINGS {
            assert!(
                names.insert(s.name) && !engine.contains(&s.name),
                "{} declared twice",
                s.name
            );
            assert_eq!(s.sources == Sources::FileOnly, s.name == "trust_remote", "{}", s.name);
            assert!(s.doc().len() > 10 && !s.doc().contains("[default"), "{}", s.name);
            match (s.show)(&base) {
                permafrost_executor::settings::Shown::Value(text) => s.check(&text).unwrap(),
                permafrost_executor::settings::Shown::Unset(what) => assert!(!what.is_empty()),
            }
        }
    }

    /// Tests that read or set environment variables take this first.
    static ENV: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn serve_args(args: &[&str]) -> Result<crate::ServeArgs, clap::Error> {
        use clap::Parser;
        let cli = crate::Cli::try_parse_from(["permafrost", "serve"].iter().chain(args))?;
        match cli.command {
            crate::Command::Serve(a) => Ok(*a),
            _ => unreachable!(),
        }
    }

    /// A setting given in the file, the environment and as a flag takes the flag's value;
    /// in the file and the environment, the environment's; in the file only, the file's.
    #[test]
    fn flag_beats_environment_beats_file_beats_default() {
        let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("permafrost.toml");
        std::fs::write(
            &file,
            "eviction_threshold = 0.5\nmax_restarts = 5\nlru_sample_rate = 0.25\nmax_connections = 50\n\
             listen = \"127.0.0.1:7000\"\ndata_dir = \"data\"\n",
        )
        .unwrap();
        let vars = [
            ("PERMAFROST_EVICTION_THRESHOLD", "0.6"),
            ("PERMAFROST_MAX_RESTARTS", "6"),
            ("PERMAFROST_MAX_CONNECTIONS", "60"),
        ];
        // SAFETY: the tests that read the environment hold `ENV`.
        unsafe {
            for (k, v) in vars {
                std::env::set_var(k, v);
            }
        }
        let args = serve_args(&[
            "--eviction-threshold",
            "0.7",
            "--max-connections",
            "70",
            "--config",
            file.to_str().unwrap(),
        ]);
        let bench = {
            use clap::Parser;
            crate::Cli::try_parse_from(["permafrost", "bench", "ycsb", "--eviction-threshold", "0.7"])
        };
        // SAFETY: as above.
        unsafe {
            for (k, _) in vars {
                std::env::remove_var(k);
            }
        }
        let args = args.unwrap();
        let file = ConfigFile::load(args.config.as_ref().unwrap()).unwrap();
        let engine = args.engine.resolve(&file).unwrap();
        assert_eq!(engine.eviction_threshold, Some(0.7), "flag over environment and file");
        assert_eq!(engine.max_restarts, Some(6), "environment over file");
        assert_eq!(engine.lru_sample_rate, Some(0.25), "file over default");
        assert_eq!(engine.eviction_size, None, "default");
        assert_eq!(
            engine.command_log,
            permafrost_executor::LogMode::Sync,
            "serve's default"
        );
        let server = args.server.resolve(&file).unwrap();
        assert_eq!(server.max_connections, 70);
        assert_eq!(server.listen.to_string(), "127.0.0.1:7000");
        assert_eq!(server.data_dir, dir.path().join("data"), "relative to the file");
        assert_eq!(server.metrics_listen.unwrap().to_string(), "127.0.0.1:9187");
        // Without the file, the environment's and the defaults.
        let engine = args.engine.resolve(&ConfigFile::default()).unwrap();
        assert_eq!((engine.max_restarts, engine.lru_sample_rate), (Some(6), None));
        // The benchmarks take the same flags, with their own default for the command log.
        let crate::Command::Bench {
            workload: crate::Workload::Ycsb(y),
        } = bench.unwrap().command
        else {
            unreachable!()
        };
        let engine = y.common.settings().unwrap();
        assert_eq!(engine.eviction_threshold, Some(0.7));
        assert_eq!(engine.max_restarts, Some(6));
        assert_eq!(engine.command_log, permafrost_executor::LogMode::Off, "bench's default");
    }

    /// Bad values given as flags or environment variables are refused by clap, naming the
    /// flag, with the setting's own message.
    #[test]
    fn bad_flags_are_refused_with_the_settings_message() {
        let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
        for (args, says) in [
            (&["--memory-limit", "lots"][..], "is not a size"),
            (&["--merge", "row"][..], "expected tuple or block"),
            (&["--log-segment-size", "1KiB"][..], "must be between 1MiB and 4GiB"),
            (&["--max-connections", "0"][..], "(allowed: 1 to 1000000)"),
            (&["--authentication-timeout", "1h"][..], "(allowed: 1s to 10m)"),
            (&["--listen", "here"][..], "is not an address"),
        ] {
            let e = serve_args(args).unwrap_err().to_string();
            assert!(e.contains(args[0]) && e.contains(says), "{e}");
        }
        assert!(
            serve_args(&["--trust-remote", "true"]).is_err(),
            "trust_remote is in the file only"
        );
    }

    /// `permafrost serve --help` lists every setting's flag with its doc, default and
    /// environment variable.
    #[test]
    fn help_lists_every_setting() {
        let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
        let help = serve_args(&["--help"]).unwrap_err().to_string();
        let base = ServeEngine::base();
        for (flag, env, doc, default) in ENGINE_SETTINGS
            .iter()
            .map(|s| (s.flag(), s.env(), s.doc(), (s.show)(&base).to_string()))
            .chain(
                SERVER_SETTINGS
                    .iter()
                    .filter(|s| s.sources == Sources::All)
                    .map(|s| (s.flag(), s.env(), s.doc(), (s.show)(&Server::base()).to_string())),
            )
        {
            let line = help
                .lines()
                .position(|l| l.trim_start().starts_with(&format!("--{flag} <")));
            let text = help
                .lines()
                .nth(line.unwrap_or_else(|| panic!("--{flag} missing:\n{help}")) + 1)
                .unwrap();
            assert!(text.contains(&doc[..20.min(doc.len())]), "--{flag}: {text}");
            assert!(text.contains(&format!("[default: {default}]")), "--{flag}: {text}");
            assert!(text.contains(&format!("[env: {env}=")), "--{flag}: {text}");
        }
        assert!(
            help.contains("[default: sync]") && !help.contains("--trust-remote"),
            "{help}"
        );
    }
}
