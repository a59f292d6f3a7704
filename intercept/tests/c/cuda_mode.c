/* Loads stub/libplugin.so with RTLD_LOCAL (as Python loads an extension) and runs it; the
 * interposer is preloaded. argv[1]: the plugin's path; argv[2]: a metrics path. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
  void *p = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!p) { printf("FAIL dlopen: %s\n", dlerror()); return 1; }
  int (*run)(const char *) = (int (*)(const char *))dlsym(p, "plugin_run");
  if (!run) { printf("FAIL no plugin_run\n"); return 1; }
  return run(argc > 2 ? argv[2] : NULL);
}
