package spectral

import (
	"math"
	"slices"
	"sort"
	"strings"
)

// Sensor is an imaging spectrometer's band table as its L2 reflectance
// products deliver it: what `pnec train --bands-common-with SENSOR`
// compares a training scene with, and what the cross-sensor measurement
// (bench/cmd/crosssensor) simulates deliveries from. Where a table is
// nominal rather than a product's own, Source says so.
type Sensor struct {
	Name    string
	Aliases []string // other spellings a user may give (lower case)
	// Source says where the centres and widths come from.
	Source string
	// Bands are the product's bands in ascending wavelength, with the
	// bands its deliveries hold no usable data in marked bad (the product's
	// own bad-band flags, or the deep water-vapour absorptions where the
	// product flags none).
	Bands BandSet
}

// waterBands marks bad the bands whose centre lies in one of the ranges
// (nm, inclusive).
func waterBands(centres []float64, ranges ...[2]float64) []bool {
	bad := make([]bool, len(centres))
	for i, c := range centres {
		for _, r := range ranges {
			if c >= r[0] && c <= r[1] {
				bad[i] = true
			}
		}
	}
	return bad
}

// linearTable is n bands from first nm, step nm apart, each fwhm(i) wide,
// rounded to the 1/1000 nm a header writes.
func linearTable(n int, first, step float64, fwhm func(i int) float64) (centres, widths []float64) {
	for i := range n {
		centres = append(centres, math.Round((first+step*float64(i))*1000)/1000)
		widths = append(widths, math.Round(fwhm(i)*1000)/1000)
	}
	return centres, widths
}

// EnMAPBands is EnMAP L2A's 224 bands in the product's order (ascending
// wavelength, the VNIR and SWIR detectors' bands interleaved where they
// overlap, 900-1000 nm): centres, widths, and whether each is a VNIR band.
// The centres are DLR's EnMAP spectral band table (91 VNIR, 133 SWIR; the
// deepest absorptions, 1390-1461 and 1760-1939 nm, are not in the
// product). The widths are not from a product: 1.2 times the local band
// spacing, which gives the EnMAP specification's average bandwidths
// (about 8 nm VNIR, 10-12 nm SWIR).
func EnMAPBands() (centres, fwhm []float64, vnir []bool) {
	type band struct {
		c, w float64
		v    bool
	}
	var bands []band
	add := func(cs []float64, isVNIR bool) {
		for i, c := range cs {
			// The nearer neighbour: beside an absorption left out of the
			// product, the other one is far.
			sp := math.Inf(1)
			if i > 0 {
				sp = c - cs[i-1]
			}
			if i < len(cs)-1 {
				sp = math.Min(sp, cs[i+1]-c)
			}
			bands = append(bands, band{c, math.Round(1.2*sp*100) / 100, isVNIR})
		}
	}
	add(enmapVNIRCentresNM, true)
	add(enmapSWIRCentresNM, false)
	sort.SliceStable(bands, func(i, j int) bool { return bands[i].c < bands[j].c })
	for _, b := range bands {
		centres, fwhm, vnir = append(centres, b.c), append(fwhm, b.w), append(vnir, b.v)
	}
	return centres, fwhm, vnir
}

// EnMAPFilledBands are the 1-based bands of EnMAPBands that L2A products
// deliver filled with no-data (the 1.38 um water vapour absorption's
// bands, 130-135: 1331-1390 nm), and whose QL_PIXELMASK planes flag every
// pixel.
var EnMAPFilledBands = []int{130, 131, 132, 133, 134, 135}

// PRISMASlots are PRISMA's VNIR and SWIR band slots as the product stores
// them (List_Cw_Vnir, List_Fwhm_Vnir, List_Cw_Swir, List_Fwhm_Swir:
// descending wavelength, 0 for a slot not in use: the VNIR's first 3 and
// the SWIR's last 2), from a 2020 PRISMA product's attributes quoted in
// public reading code (the values vary a little between products).
func PRISMASlots() (vnirNM, vnirFWHM, swirNM, swirFWHM []float64) {
	return slices.Clone(prismaVNIRSlotsNM), slices.Clone(prismaVNIRFWHMSlotsNM), slices.Clone(prismaSWIRSlotsNM), slices.Clone(prismaSWIRFWHMSlotsNM)
}

// prismaBands is PRISMASlots' bands in use, ascending.
func prismaBands() (centres, fwhm []float64) {
	type band struct{ c, w float64 }
	var bands []band
	for _, t := range [][2][]float64{{prismaVNIRSlotsNM, prismaVNIRFWHMSlotsNM}, {prismaSWIRSlotsNM, prismaSWIRFWHMSlotsNM}} {
		for i, c := range t[0] {
			if c > 0 {
				bands = append(bands, band{c, t[1][i]})
			}
		}
	}
	sort.SliceStable(bands, func(i, j int) bool { return bands[i].c < bands[j].c })
	for _, b := range bands {
		centres, fwhm = append(centres, b.c), append(fwhm, b.w)
	}
	return centres, fwhm
}

// Sensors are the band tables pnec knows, by name.
func Sensors() []Sensor {
	var out []Sensor
	{
		c, w, _ := EnMAPBands()
		bad := make([]bool, len(c))
		for _, b := range EnMAPFilledBands {
			bad[b-1] = true
		}
		out = append(out, Sensor{Name: "EnMAP", Aliases: []string{"enmap"},
			Source: "DLR's EnMAP band table (centres); widths 1.2 x the band spacing (nominal); bands 130-135 filled with no-data in L2A",
			Bands:  BandSet{Bands: len(c), CentresNM: c, FWHMNM: w, Bad: bad}})
	}
	{
		c, w := linearTable(285, 381.0, 7.4143, func(i int) float64 { return 8.3 + 0.9*float64(i)/284 })
		out = append(out, Sensor{Name: "EMIT", Aliases: []string{"emit"},
			Source: "nominal: 285 bands 381-2493 nm, 7.4 nm apart, FWHM 8.3-9.2 nm; good_wavelengths 0 in 1320-1440 and 1770-1960 nm",
			Bands:  BandSet{Bands: len(c), CentresNM: c, FWHMNM: w, Bad: waterBands(c, [2]float64{1320, 1440}, [2]float64{1770, 1960})}})
	}
	{
		c, w := prismaBands()
		out = append(out, Sensor{Name: "PRISMA", Aliases: []string{"prisma"},
			Source: "a 2020 PRISMA product's List_Cw/List_Fwhm attributes; the product flags no water band, the table marks 1340-1450 and 1800-1960 nm unusable",
			Bands:  BandSet{Bands: len(c), CentresNM: c, FWHMNM: w, Bad: waterBands(c, [2]float64{1340, 1450}, [2]float64{1800, 1960})}})
	}
	{
		c, w := linearTable(235, 401.9, 2.5545, func(int) float64 { return 3.5 })
		out = append(out, Sensor{Name: "DESIS", Aliases: []string{"desis"},
			Source: "nominal: 235 bands 402-1000 nm, 2.55 nm apart, FWHM 3.5 nm",
			Bands:  BandSet{Bands: len(c), CentresNM: c, FWHMNM: w}})
	}
	{
		c, w := linearTable(425, 376.86, 5.0096, func(i int) float64 { return 5.5 + 0.6*float64(i)/424 })
		out = append(out, Sensor{Name: "AVIRIS-NG", Aliases: []string{"aviris-ng", "avirisng", "ang"},
			Source: "nominal: 425 bands 377-2500 nm, 5 nm apart (AVIRIS-NG distribution document), FWHM 5.5-6.1 nm; bbl 0 in 1330-1440, 1780-1960 and above 2480 nm",
			Bands:  BandSet{Bands: len(c), CentresNM: c, FWHMNM: w, Bad: waterBands(c, [2]float64{1330, 1440}, [2]float64{1780, 1960}, [2]float64{2480, 2600})}})
	}
	{
		c, w := linearTable(284, 390.8, 7.4, func(int) float64 { return 7.8 })
		out = append(out, Sensor{Name: "AVIRIS-3", Aliases: []string{"aviris-3", "aviris3", "av3"},
			Source: "nominal: 284 bands 391-2484 nm, 7.4 nm apart, FWHM 7.8 nm; 1330-1440 and 1780-1960 nm marked unusable",
			Bands:  BandSet{Bands: len(c), CentresNM: c, FWHMNM: w, Bad: waterBands(c, [2]float64{1330, 1440}, [2]float64{1780, 1960})}})
	}
	{
		c, w := linearTable(426, 376.4, 4.99, func(int) float64 { return 5.6 })
		out = append(out, Sensor{Name: "Tanager", Aliases: []string{"tanager"},
			Source: "nominal: 426 bands 376-2499 nm, about 5 nm apart (Planet's Tanager product specification), FWHM 5.6 nm; good_wavelengths 0 in 1330-1450 and 1780-1970 nm",
			Bands:  BandSet{Bands: len(c), CentresNM: c, FWHMNM: w, Bad: waterBands(c, [2]float64{1330, 1450}, [2]float64{1780, 1970})}})
	}
	{
		c, w := linearTable(224, 400, 2100.0/223, func(int) float64 { return 10 })
		out = append(out, Sensor{Name: "AVIRIS", Aliases: []string{"aviris", "aviris-classic"},
			Source: "nominal: AVIRIS (classic) 224 bands spread evenly over 400-2500 nm, FWHM 10 nm; 1350-1450 and 1800-1960 nm marked unusable",
			Bands:  BandSet{Bands: len(c), CentresNM: c, FWHMNM: w, Bad: waterBands(c, [2]float64{1350, 1450}, [2]float64{1800, 1960})}})
	}
	return out
}

// SensorByName finds a sensor by its name or an alias, ignoring case.
func SensorByName(name string) (Sensor, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, s := range Sensors() {
		if strings.ToLower(s.Name) == n || slices.Contains(s.Aliases, n) {
			return s, true
		}
	}
	return Sensor{}, false
}

// SensorNames are the names SensorByName knows.
func SensorNames() []string {
	var out []string
	for _, s := range Sensors() {
		out = append(out, s.Name)
	}
	return out
}

// Band tables (nm) the Sensors are built from: generated data, not code.

var enmapVNIRCentresNM = []float64{
	418.416, 424.043, 429.457, 434.686, 439.758, 444.699, 449.539, 454.306,
	459.031, 463.73, 468.411, 473.08, 477.744, 482.411, 487.087, 491.78,
	496.497, 501.243, 506.02, 510.829, 515.672, 520.551, 525.467, 530.424,
	535.422, 540.463, 545.551, 550.687, 555.873, 561.112, 566.405, 571.756,
	577.166, 582.636, 588.171, 593.773, 599.446, 605.193, 611.017, 616.923,
	622.921, 628.987, 635.112, 641.294, 647.537, 653.841, 660.207, 666.637,
	673.131, 679.691, 686.319, 693.014, 699.78, 706.617, 713.524, 720.501,
	727.545, 734.654, 741.826, 749.06, 756.353, 763.703, 771.108, 778.567,
	786.078, 793.639, 801.249, 808.905, 816.608, 824.355, 832.145, 839.976,
	847.847, 855.757, 863.703, 871.683, 879.693, 887.729, 895.789, 903.87,
	911.968, 920.081, 928.204, 936.335, 944.47, 952.608, 960.748, 968.892,
	977.037, 985.186, 993.338,
}

var enmapSWIRCentresNM = []float64{
	901.961, 911.571, 921.32, 931.203, 941.218, 951.36, 961.628, 972.016,
	982.523, 993.144, 1003.88, 1014.72, 1025.66, 1036.7, 1047.84, 1059.07,
	1070.39, 1081.78, 1093.26, 1104.81, 1116.43, 1128.1, 1139.84, 1151.62,
	1163.44, 1175.3, 1187.2, 1199.11, 1211.05, 1223.0, 1234.97, 1246.94,
	1258.93, 1270.92, 1282.92, 1294.91, 1306.9, 1318.88, 1330.85, 1342.82,
	1354.76, 1366.69, 1378.6, 1390.48, 1461.1, 1472.74, 1484.34, 1495.89,
	1507.4, 1518.87, 1530.29, 1541.67, 1553.01, 1564.3, 1575.55, 1586.76,
	1597.91, 1609.02, 1620.09, 1631.11, 1642.07, 1653.0, 1663.87, 1674.7,
	1685.47, 1696.2, 1706.87, 1717.5, 1728.08, 1738.6, 1749.08, 1759.51,
	1939.14, 1948.69, 1958.2, 1967.66, 1977.08, 1986.45, 1995.79, 2005.08,
	2014.33, 2023.54, 2032.7, 2041.83, 2050.92, 2059.96, 2068.97, 2077.93,
	2086.86, 2095.74, 2104.59, 2113.4, 2122.17, 2130.9, 2139.6, 2148.26,
	2156.88, 2165.47, 2174.02, 2182.53, 2191.01, 2199.45, 2207.86, 2216.24,
	2224.58, 2232.89, 2241.16, 2249.4, 2257.61, 2265.79, 2273.93, 2282.04,
	2290.12, 2298.17, 2306.19, 2314.17, 2322.13, 2330.05, 2337.94, 2345.81,
	2353.64, 2361.44, 2369.21, 2376.95, 2384.66, 2392.34, 2400.0, 2407.62,
	2415.21, 2422.78, 2430.32, 2437.82, 2445.3,
}

var prismaVNIRSlotsNM = []float64{
	0, 0, 0, 972.65137, 962.2815, 951.3803, 939.87714, 929.4021,
	919.1934, 908.6615, 898.00415, 887.28357, 876.6585, 865.9668, 855.1996, 844.44434,
	833.7686, 823.16296, 812.55695, 801.95374, 791.3786, 780.9292, 770.54535, 760.1139,
	749.7475, 739.4342, 729.26086, 719.1886, 709.01324, 699.11145, 689.43713, 679.4886,
	669.83234, 660.27905, 650.8059, 641.34863, 632.146, 623.2119, 614.18665, 605.40576,
	596.4894, 587.8376, 579.3654, 571.01636, 562.75, 554.5778, 546.493, 538.49963,
	530.67944, 522.92865, 515.1879, 507.67554, 500.14948, 492.71198, 485.42203, 478.18848,
	470.96112, 463.7431, 456.38937, 449.04562, 441.67093, 434.32034, 426.9796, 419.3852,
	411.33044, 402.45462,
}

var prismaVNIRFWHMSlotsNM = []float64{
	0, 0, 0, 12.91153, 12.983634, 13.522025, 13.167123, 12.756155,
	12.91504, 13.082645, 13.121019, 13.102607, 13.073585, 13.15429, 13.131966, 13.061808,
	12.990087, 12.972249, 12.945051, 12.928755, 12.8288965, 12.756103, 12.733164, 12.772942,
	12.617298, 12.538957, 12.411063, 12.352824, 12.427184, 11.981684, 12.081189, 11.965828,
	11.833743, 11.718903, 11.636767, 11.532773, 11.15188, 11.233146, 11.043023, 10.954897,
	10.797392, 10.548604, 10.398883, 10.308916, 10.17477, 10.057176, 9.988766, 9.784185,
	9.667365, 9.637314, 9.49066, 9.368525, 9.296826, 9.203521, 9.028441, 8.951238,
	8.956281, 8.959137, 9.080744, 9.1460905, 9.219894, 9.25125, 9.402363, 9.834814,
	10.555419, 11.413751,
}

var prismaSWIRSlotsNM = []float64{
	2496.877, 2490.0305, 2483.593, 2476.7944, 2469.4182, 2462.8157, 2456.3328, 2448.9263,
	2442.1904, 2435.3296, 2428.4036, 2420.9905, 2414.159, 2407.3418, 2399.804, 2392.8442,
	2385.8118, 2378.5127, 2371.339, 2364.3738, 2357.026, 2349.578, 2342.5918, 2335.2395,
	2327.6096, 2320.6433, 2312.9158, 2305.505, 2298.3381, 2290.5762, 2283.2778, 2275.7732,
	2268.0452, 2260.6309, 2252.8518, 2245.2166, 2237.651, 2229.7563, 2222.1958, 2214.345,
	2206.6006, 2198.8901, 2190.8389, 2183.1863, 2175.0745, 2167.2554, 2159.2913, 2151.1292,
	2143.2288, 2135.2388, 2127.097, 2118.9587, 2110.8193, 2102.5515, 2094.4104, 2086.1042,
	2077.7546, 2069.542, 2061.1409, 2052.7603, 2044.4255, 2035.9985, 2027.479, 2019.0529,
	2010.4133, 2001.8461, 1993.2917, 1984.5515, 1975.7843, 1967.0625, 1958.3737, 1949.6423,
	1940.834, 1931.9949, 1923.0927, 1914.051, 1904.6321, 1895.8495, 1886.8143, 1878.4668,
	1868.0199, 1859.3008, 1850.2821, 1841.0529, 1831.7446, 1822.1523, 1812.8234, 1803.3687,
	1793.6924, 1784.4453, 1774.9119, 1765.2563, 1755.5525, 1745.933, 1736.2584, 1726.4401,
	1716.6006, 1706.811, 1697.0128, 1687.1749, 1677.127, 1666.9692, 1656.7743, 1646.9758,
	1636.8574, 1626.7844, 1616.587, 1606.2463, 1595.9828, 1585.6343, 1575.396, 1565.1245,
	1554.5829, 1544.0325, 1533.567, 1523.0099, 1512.4164, 1501.7822, 1491.2006, 1480.6229,
	1469.7032, 1459.0706, 1448.9243, 1438.1736, 1427.1089, 1416.3131, 1405.3914, 1394.5273,
	1383.0116, 1372.7213, 1360.8453, 1349.6013, 1338.9486, 1328.0923, 1317.0206, 1306.0494,
	1295.1996, 1284.2821, 1273.3088, 1262.3367, 1250.7979, 1240.0587, 1229.0012, 1217.698,
	1207.1168, 1196.1769, 1185.4003, 1174.5281, 1163.4866, 1152.4738, 1141.8761, 1131.145,
	1120.497, 1109.7427, 1099.1104, 1088.5919, 1078.0413, 1067.6122, 1057.3828, 1047.4341,
	1037.7673, 1028.8129, 1017.9914, 1008.17413, 998.38153, 988.4178, 978.74365, 969.39557,
	959.5276, 951.01624, 942.96277, 0, 0,
}

var prismaSWIRFWHMSlotsNM = []float64{
	9.530614, 9.036248, 8.984794, 9.680815, 9.149814, 8.90354, 9.453581, 9.431822,
	8.7873745, 9.40067, 9.464742, 9.691836, 8.97784, 9.704579, 9.6363125, 9.286388,
	9.706244, 9.633341, 9.516845, 9.51342, 9.954835, 9.567097, 9.620664, 10.056107,
	9.693366, 9.764342, 10.139665, 9.672169, 10.0234375, 10.004962, 9.815104, 10.233932,
	9.899899, 10.246022, 10.175902, 10.069694, 10.317282, 10.290884, 10.143012, 10.389603,
	10.067344, 10.552496, 10.316623, 10.305227, 10.659013, 10.189168, 10.820628, 10.553013,
	10.528742, 10.707762, 10.627058, 10.801973, 10.80722, 10.83661, 10.779761, 11.042035,
	10.867285, 11.108671, 10.901592, 11.005702, 10.930906, 11.262461, 11.046657, 11.28012,
	11.19699, 11.3805485, 11.212891, 11.588905, 11.374359, 11.525665, 11.419775, 11.483898,
	11.789079, 11.631749, 11.955762, 11.574869, 12.524459, 11.542392, 11.567157, 12.545796,
	11.145657, 12.099602, 12.396975, 12.4054985, 12.242381, 12.863776, 12.232095, 12.296617,
	12.525058, 12.494041, 12.283826, 12.422597, 12.856553, 12.918615, 12.6999445, 12.575837,
	12.71506, 13.016736, 13.12668, 12.998398, 12.912523, 13.3708515, 12.585966, 13.177498,
	13.253216, 13.306338, 13.734705, 13.48711, 13.622092, 13.63427, 13.571609, 13.747836,
	13.862521, 13.741892, 13.91596, 13.901828, 14.005367, 14.092263, 13.980284, 14.168185,
	14.241516, 13.700014, 13.85956, 14.6774235, 14.082534, 14.2978, 14.388855, 14.213633,
	14.839593, 14.532085, 15.091254, 14.479001, 14.438772, 14.679442, 14.564553, 14.493105,
	14.449337, 14.524426, 14.553549, 14.9414215, 14.7266865, 14.364552, 14.746681, 14.385526,
	14.561595, 14.346457, 14.386706, 14.303056, 14.665467, 14.322483, 14.102333, 14.347128,
	14.031915, 14.408157, 14.059064, 14.077611, 13.991558, 13.864974, 13.65352, 13.500643,
	13.309181, 13.041258, 12.960461, 12.43994, 12.6957, 12.338166, 12.208103, 12.108707,
	12.050459, 10.962302, 10.920637, 0, 0,
}
