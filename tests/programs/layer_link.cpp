// SPDX-License-Identifier: BSD-3-Clause
// Linked with one library of the layer table whole (every object in it) and
// only the libraries below it by the test lint.layers_link.* (which builds it:
// tests/programs/programs.cmake): that it links is the check that no object
// of that library calls up the table or across it.
int main() { return 0; }
