#ifndef TVLAB_EXPERIMENTS_GRID_REPORT_PROBES_REPORT_H_
#define TVLAB_EXPERIMENTS_GRID_REPORT_PROBES_REPORT_H_

// The training probes (train.probe_every, docs/spec.md) that each finished
// run summarised in its metrics.json (`probes`: per name first, last, max,
// mean, first_step, last_step, count), in the grid's report:
//   probes.csv  every probe of every finished run (written only when some
//               run recorded probes, so other grids' results are unchanged)
//   results.md  a "Probes (exploratory)" section: per cell the seed mean of
//               the first and the largest value of the probes the spec's
//               report_probes selects
// Finished runs include diverged ones: their probes are often the point
// (attention-logit growth before a divergence). probes.csv marks them
// (state "diverged"); results.md's means, like its other columns, are over
// the seeds with results (finished and not diverged).

#include <string>

#include "experiments/grid/report/grid_results.h"

namespace tvlab {

// Whether any finished run (diverged ones included) recorded probes.
bool AnyProbes(const GridResults& results);

// probes.csv: header
//   cell,seed,state,probe,first,last,max,mean,first_step,last_step,count
// one row per finished run and probe, in results.csv's order (cells, then
// seeds), each run's probes in its train_log.csv column order; cell and
// seed spelled as in results.csv, state "finished" or "diverged". Values
// are written to round-trip exactly (FormatRoundTrip); a statistic absent
// from metrics.json is an empty field.
std::string ProbesCsv(const GridResults& results);

// results.md's section (starting with a blank line and "## Probes
// (exploratory)"), or "" when no finished run recorded probes and
// report_probes is empty. Rows per cell and selected probe: seeds, mean
// first, mean max; each report_probes entry that matches no probe of any
// finished run is named, with the probe families the runs did record.
std::string ProbesMarkdown(const GridResults& results);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_GRID_REPORT_PROBES_REPORT_H_
