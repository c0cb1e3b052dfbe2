"""A pack whose answer is only in the late part of one long section (no sub-heading to split
it): the dense leg finds it with embedding windows, and cannot without (the model reads the
first 256 word-pieces of a chunk)."""

GARDEN = [
    "Tomatoes want six hours of direct sun and a deep weekly watering rather than daily sips.",
    "Mulch the beds with straw once the soil has warmed, to keep moisture in and weeds down.",
    "Rotate brassicas to a new bed each year so that club root does not build up in the soil.",
    "Sow carrots thinly in loose, stone-free ground and thin the seedlings to a thumb apart.",
    "Compost needs a balance of green and brown matter; turn the heap every couple of weeks.",
    "Prune apple trees in winter while they are dormant, removing crossing and dead branches.",
    "Slugs come out on damp evenings: beer traps and copper tape keep them off the lettuces.",
    "Beans fix nitrogen, so follow them with hungry crops such as squash or sweetcorn.",
    "Raised beds drain faster and warm earlier in spring, but they dry out in a hot summer.",
    "Harvest courgettes small and often; left alone, they turn into watery marrows in days.",
    "Strawberry runners can be pegged into pots to root, giving free plants for next year.",
    "A cold frame hardens off seedlings before they go out after the last frost date.",
    "Garlic is planted in autumn, pointed end up, and lifted when the leaves turn yellow.",
    "Netting keeps pigeons off the cabbages and butterflies from laying eggs on the leaves.",
    "Water in the morning so the foliage dries before nightfall and mildew has less chance.",
    "Leeks are dropped into deep dibber holes and watered in, without firming the soil.",
    "Onion sets bolt in a cold snap; choose heat-treated sets for an early spring planting.",
    "Feed container plants weekly in summer, because frequent watering washes nutrients out.",
]
ANSWER = (
    "The lawnmower's two-stroke engine takes a fifty to one mix of unleaded petrol and "
    "two-stroke oil. A wrong fuel mix is why the mower engine smokes blue and stalls: too much "
    "oil fouls the spark plug, too little seizes the piston. Mix the petrol and oil in a clean "
    "can, shake it, and never keep mixed fuel for the mower longer than a month. Drain the "
    "mower's fuel tank before winter, and start the engine with fresh mix in spring.\n"
)
PACK = {
    "garden.md": "# Kitchen garden notes\n\n"
    + "\n\n".join(" ".join(GARDEN[i : i + 3]) for i in range(0, len(GARDEN), 3))
    + "\n\n"
    + ANSWER
    + "\n",
    "tools.md": "# Garden tools\n\nKeep spade and hoe edges sharp with a file, and oil the "
    "blades before storing them for the winter.\n",
    "shed.md": "# The shed\n\nA dry shed with a shelf for seed packets and a hook for every "
    "tool keeps the season organised.\n",
    "car.md": "# The car\n\nCheck the tyre pressures monthly and top up the screen wash "
    "before a long drive.\n",
}
QUERY = "what fuel and oil mix does the lawnmower engine need"
