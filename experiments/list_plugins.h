#ifndef TVLAB_EXPERIMENTS_LIST_PLUGINS_H_
#define TVLAB_EXPERIMENTS_LIST_PLUGINS_H_

#include <ostream>

namespace tvlab {

// `--list_plugins`: one line per plugin kind of the kind table, naming the
// spec field that selects it, its default and the names registered in this
// binary, and a line with the option fields of the plugins that have options.
void ListPlugins(std::ostream& out);

}  // namespace tvlab

#endif  // TVLAB_EXPERIMENTS_LIST_PLUGINS_H_
