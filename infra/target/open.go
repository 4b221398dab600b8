package target

// Config is what an Opener is given: the --target argument, resolved.
type Config struct {
	// Platform is the platform the target names: "local" for --target
	// local, else the TARGET.yaml's `platform:`.
	Platform string
	// Path is the TARGET.yaml's path; "" for --target local.
	Path string
	// Text is the TARGET.yaml's contents; nil for --target local.
	Text []byte
	// WorkDir is scratch space for one run's files (certificates, keys,
	// client configs): emptied when a run starts, removed at its end
	// unless --keep.
	WorkDir string
	// DB is the campaign database's path; state that must outlive the
	// process (Terraform's, for one) belongs beside it, not in WorkDir.
	DB string
	// Campaign is the plan's campaign name (its rows' `campaign`): remote
	// targets label machines and name directories on them with it.
	Campaign string
	// Keep is --keep: what the campaign made is left in place at its end
	// (on a cluster someone else runs, its topics; on the local target,
	// Apache Kafka's brokers).
	Keep bool
}

// Opener opens a target of one platform. Its errors are bad input and name
// the target file, and the line where there is one.
type Opener func(Config) (Target, error)

// Platforms maps each platform this xp can provision to its Opener. cmd
// builds it; the runner knows platforms only through it.
type Platforms map[string]Opener
