/* cli_version.h - the version both commands print (--version) and trace-run writes into each
 * trace's header (tool_version); the Makefile reads it for trc.pc. The one place it is written. */
#ifndef TRC_CLI_VERSION_H
#define TRC_CLI_VERSION_H

#define CLI_VERSION "0.1.0"

#endif /* TRC_CLI_VERSION_H */
