// Package remote deploys xp onto machines reached over SSH (the aws, azure
// and hosts platforms: same code, different Terraform module) and runs
// loads from them: the xp binary is uploaded to every host and plays every
// role there (embedded broker, load generator, telemetry sampler) through
// `xp agent`; a run's load is split over the client hosts and their results
// merged into one.
package remote
