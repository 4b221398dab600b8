// Package targetfile reads TARGET.yaml, the file that says where a
// campaign's infrastructure comes from (platform, Terraform module and
// vars, ssh, kafka releases, gateways, an existing cluster's endpoints)
// and how it is torn down. Read and Parse check it whole: every problem
// is an *Error naming the file and line.
package targetfile
