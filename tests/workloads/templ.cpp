// templ: C++ templates and namespaces, for demangling tests:
// main -> shapes::Accumulator<double>::run -> shapes::burn<double, 3>.
//
// Usage: templ [SECONDS]   (default 1)
#include <chrono>
#include <cstdlib>

namespace shapes {

volatile double sink;

template <typename T, int N>
__attribute__((noinline)) T burn(T x)
{
	for (int i = 0; i < 100000; i++)
		x = x * static_cast<T>(1.0000001) + static_cast<T>(N);
	return x;
}

template <typename T>
struct Accumulator {
	__attribute__((noinline)) void run(double seconds)
	{
		auto t0 = std::chrono::steady_clock::now();
		T x = 1;
		while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds)
			x = burn<T, 3>(x);
		sink = static_cast<double>(x);
	}
};

}  // namespace shapes

int main(int argc, char **argv)
{
	shapes::Accumulator<double> a;
	a.run(argc > 1 ? std::atof(argv[1]) : 1.0);
	return 0;
}
// SPDX-License-Identifier: MIT
