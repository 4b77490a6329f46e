// A CPU-bound Rust program with a known call structure, for the tests
// of Rust stacks: each hot function is kept a frame of its own by
// #[inline(never)], and the work goes through the shapes of code that
// Rust names in its own way: a method of an impl block, a generic
// function instantiated for two types, a closure called through an
// iterator adaptor, and trait methods called through &dyn Shape.
//
//     rusty SECONDS
use std::env;
use std::time::{Duration, Instant};

// What std::hint::black_box does on newer compilers (it is unstable on
// Debian's 1.63): a value the optimizer cannot see through, so that loops
// are not folded away and calls are not made into jumps.
#[inline(always)]
fn opaque<T: Copy>(x: T) -> T {
	unsafe { std::ptr::read_volatile(&x) }
}

pub trait Shape {
	fn area(&self) -> f64;
}

pub struct Square {
	side: f64,
}

pub struct Circle {
	r: f64,
}

impl Shape for Square {
	#[inline(never)]
	fn area(&self) -> f64 {
		let mut a = 0.0;
		for i in 0..20_000 {
			a += self.side * self.side + (i as f64) * 1e-9;
		}
		a
	}
}

impl Shape for Circle {
	#[inline(never)]
	fn area(&self) -> f64 {
		let mut a = 0.0;
		for i in 0..20_000 {
			a += 3.14159 * self.r * self.r - (i as f64) * 1e-9;
		}
		a
	}
}

pub struct Worker {
	acc: u64,
}

impl Worker {
	#[inline(never)]
	pub fn spin(&mut self, n: u64) -> u64 {
		for i in 0..n {
			self.acc = self.acc.wrapping_mul(6364136223846793005).wrapping_add(i);
		}
		self.acc
	}
}

// Summed many times over, so that each instantiation is a hot frame.
#[inline(never)]
pub fn sum<T: Copy + Into<u64>>(v: &[T]) -> u64 {
	let mut s: u64 = 0;
	for r in 0..16u64 {
		for x in opaque(v) {
			s = s.wrapping_add((*x).into().wrapping_mul(r | 1));
		}
	}
	s
}

// The closures are called through a reference to dyn Fn, and apply is
// given two, so that each stays a function of its own rather than being
// inlined into it.
#[inline(never)]
pub fn apply(n: u64, f: &dyn Fn(u64) -> u64) -> u64 {
	(0..n).map(|i| f(opaque(i))).fold(0u64, |a, b| a.wrapping_add(b))
}

#[inline(never)]
fn shapes(all: &[&dyn Shape]) -> f64 {
	all.iter().map(|s| opaque(*s).area()).sum()
}

#[inline(never)]
fn stage_c(w: &mut Worker, big: &[u64], small: &[u32], all: &[&dyn Shape]) -> u64 {
	let k = opaque(7u64);
	let mut s = w.spin(200_000);
	s = s.wrapping_add(sum(big));
	s = s.wrapping_add(sum(small));
	s = s.wrapping_add(apply(30_000, &|x| {
		let mut h = x ^ k;
		for _ in 0..8 {
			h = h.wrapping_mul(0x9e3779b97f4a7c15).rotate_left(17);
		}
		h
	}));
	s = s.wrapping_add(apply(30_000, &|x| {
		let mut h = x.wrapping_add(k);
		for _ in 0..8 {
			h = (h ^ (h >> 29)).wrapping_mul(0xbf58476d1ce4e5b9);
		}
		h
	}));
	s.wrapping_add(shapes(all) as u64)
}

#[inline(never)]
fn stage_b(w: &mut Worker, big: &[u64], small: &[u32], all: &[&dyn Shape]) -> u64 {
	opaque(stage_c(w, big, small, all))
}

#[inline(never)]
fn stage_a(w: &mut Worker, big: &[u64], small: &[u32], all: &[&dyn Shape]) -> u64 {
	opaque(stage_b(w, big, small, all))
}

fn main() {
	let secs: f64 = env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1.0);
	let end = Instant::now() + Duration::from_secs_f64(secs);
	let big: Vec<u64> = (0..4096).collect();
	let small: Vec<u32> = (0..4096).collect();
	let sq = Square { side: 2.0 };
	let ci = Circle { r: 1.5 };
	let all: [&dyn Shape; 2] = [&sq, &ci];
	let mut w = Worker { acc: 1 };
	let mut s: u64 = 0;
	while Instant::now() < end {
		s = s.wrapping_add(stage_a(&mut w, &big, &small, &all));
	}
	println!("{}", s);
}
// SPDX-License-Identifier: MIT
