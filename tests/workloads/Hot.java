/* SPDX-License-Identifier: MIT
 * Hot: a hot Java method called through two others, for a JVM run with
 * -XX:+PreserveFramePointer: main -> middle -> hot, until SECONDS have
 * passed.
 *
 * Usage: java Hot [SECONDS]   (default 2)
 */
public class Hot {
	static int hot(int n) {
		int s = 0;
		for (int i = 0; i < n; i++)
			s = (s * 31 + i) % 1000003;
		return s;
	}

	static int middle(int n) {
		return hot(n) + 1;
	}

	public static void main(String[] args) {
		double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 2;
		if (!(seconds >= 0)) {
			System.err.println("usage: Hot [SECONDS]");
			System.exit(3);
		}
		long end = System.nanoTime() + (long)(seconds * 1e9);
		long t = 0;
		while (System.nanoTime() < end)
			t += middle(200000);
		System.out.println("Hot: " + t);
	}
}
