// Placeholder until the driver lands: keeps the build whole.
#include <cstdio>
int main() { std::puts("dtplan " DTPLAN_VERSION); }
